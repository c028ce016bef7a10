// Hand-written SVG charts: a stacked bar, lines with bands and OOM marks, and a scatter with
// error bars and a frontier. They are DOM (testable, selectable text, styled by the page's
// CSS classes, no inline style), draw nothing a strict CSP forbids, and need no library.
import { h, s } from "./dom.js";
import { num } from "./fmt.js";

const M = { top: 24, right: 24, bottom: 44, left: 64 };

function niceStep(span, count) {
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const err = raw / mag;
  return mag * (err >= 7.5 ? 10 : err >= 3.5 ? 5 : err >= 1.5 ? 2 : 1);
}

/** A linear scale from [d0, d1] to [r0, r1] with round ticks. */
export function linear(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  const f = (v) => r0 + ((v - d0) / span) * (r1 - r0);
  f.ticks = (count = 5) => {
    const step = niceStep(span, count);
    const out = [];
    for (let v = Math.ceil(d0 / step) * step; v <= d1 + step * 1e-9; v += step) out.push(+v.toPrecision(12));
    return out;
  };
  return f;
}

/** A log scale (base 2 ticks for batch sizes, decades otherwise). */
export function logScale(d0, d1, r0, r1, base = 10) {
  const l0 = Math.log(d0), l1 = Math.log(d1);
  const span = l1 - l0 || 1;
  const f = (v) => r0 + ((Math.log(v) - l0) / span) * (r1 - r0);
  f.ticks = () => {
    const out = [];
    const lo = Math.floor(Math.log(d0) / Math.log(base)), hi = Math.ceil(Math.log(d1) / Math.log(base));
    for (let e = lo; e <= hi; e += 1) {
      const v = base ** e;
      if (v >= d0 * 0.999 && v <= d1 * 1.001) out.push(v);
    }
    if (base === 10 && out.length < 3) {
      for (let e = lo; e <= hi; e += 1) for (const m of [2, 5]) {
        const v = m * 10 ** e;
        if (v >= d0 && v <= d1) out.push(v);
      }
      out.sort((a, b) => a - b);
    }
    return out;
  };
  return f;
}

function figure(title, desc, width, height, body, legend) {
  const tid = `chart-${Math.random().toString(36).slice(2, 9)}`;
  return h("figure", { class: "chart" },
    s("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": `${tid}-t ${tid}-d`, class: "chart-svg" },
      s("title", { id: `${tid}-t` }, title),
      s("desc", { id: `${tid}-d` }, desc),
      body),
    legend,
    h("figcaption", null, title));
}

function axes(x, y, width, height, { xLabel, yLabel, xFmt = num, yFmt = num, xTicks, yTicks }) {
  const g = s("g", { class: "axes" });
  const x0 = M.left, x1 = width - M.right, y0 = height - M.bottom, y1 = M.top;
  g.append(s("line", { x1: x0, y1: y0, x2: x1, y2: y0, class: "axis" }));
  g.append(s("line", { x1: x0, y1: y0, x2: x0, y2: y1, class: "axis" }));
  for (const v of xTicks ?? x.ticks(6)) {
    const px = x(v);
    g.append(s("line", { x1: px, y1: y0, x2: px, y2: y0 + 4, class: "tick" }));
    g.append(s("text", { x: px, y: y0 + 16, class: "tick-label", "text-anchor": "middle" }, xFmt(v)));
  }
  for (const v of yTicks ?? y.ticks(5)) {
    const py = y(v);
    g.append(s("line", { x1: x0, y1: py, x2: x1, y2: py, class: "grid" }));
    g.append(s("text", { x: x0 - 6, y: py + 4, class: "tick-label", "text-anchor": "end" }, yFmt(v)));
  }
  if (xLabel) g.append(s("text", { x: (x0 + x1) / 2, y: height - 8, class: "axis-label", "text-anchor": "middle" }, xLabel));
  if (yLabel) g.append(s("text", { x: 12, y: y1 - 8, class: "axis-label" }, yLabel));
  return g;
}

/**
 * Memory as a stacked horizontal bar against a capacity line (the GPU's usable memory), with
 * the estimate's band drawn as a whisker. segments: [{label, value}] in one unit (bytes).
 */
export function stackedBar(segments, { capacity, band, width = 640, title, unit = (v) => num(v), capacityLabel }) {
  const height = 130;
  const total = segments.reduce((a, b) => a + b.value, 0);
  const max = Math.max(total, capacity || 0, band?.high || 0) * 1.08 || 1;
  const x = linear(0, max, M.left, width - M.right);
  const barY = 44, barH = 36;
  const body = s("g", null, axes(x, linear(0, 1, 0, 0), width, height, { xFmt: unit, yTicks: [] }));
  let acc = 0;
  segments.forEach((seg, i) => {
    body.append(s("rect", { x: x(acc), y: barY, width: Math.max(0, x(acc + seg.value) - x(acc)), height: barH,
      class: `seg seg-${i % 10}` }, s("title", null, `${seg.label}: ${unit(seg.value)}`)));
    acc += seg.value;
  });
  if (band) {
    const yb = barY - 12;
    body.append(s("g", { class: "band" },
      s("line", { x1: x(band.low), y1: yb, x2: x(band.high), y2: yb }),
      s("line", { x1: x(band.low), y1: yb - 5, x2: x(band.low), y2: yb + 5 }),
      s("line", { x1: x(band.high), y1: yb - 5, x2: x(band.high), y2: yb + 5 }),
      s("title", null, `${unit(band.low)} – ${unit(band.high)}`)));
  }
  if (capacity) {
    body.append(s("line", { x1: x(capacity), y1: barY - 26, x2: x(capacity), y2: barY + barH + 8, class: "capacity" }));
    body.append(s("text", { x: x(capacity), y: barY - 30, class: "capacity-label", "text-anchor": "end" },
      capacityLabel ?? unit(capacity)));
  }
  const legend = h("ul", { class: "legend" }, segments.map((seg, i) =>
    h("li", null, h("span", { class: `swatch seg-${i % 10}`, "aria-hidden": "true" }), `${seg.label}: ${unit(seg.value)}`)));
  const desc = segments.map((g) => `${g.label} ${unit(g.value)}`).join(", ");
  return figure(title, desc, width, height, body, legend);
}

/**
 * Lines by series with p10–p90 whiskers; a point with `oom: true` is drawn as an OOM mark on
 * the x axis (the configuration did not fit). series: [{name, points: [{x, y, low, high, oom}]}].
 */
export function lineChart(series, { width = 640, title, xLabel, yLabel, oomLabel = "OOM", logX = true }) {
  const height = 320;
  const pts = series.flatMap((sr) => sr.points);
  const xs = pts.map((p) => p.x).filter((v) => v > 0);
  const ys = pts.filter((p) => !p.oom).map((p) => p.high ?? p.y);
  let xMin = Math.min(...xs), xMax = Math.max(...xs);
  if (xMin === xMax) { xMin /= 2; xMax *= 2; }
  const useLog = logX && xMax / xMin >= 4;
  const x = useLog ? logScale(xMin / 1.3, xMax * 1.3, M.left, width - M.right, 2)
    : linear(Math.min(0, xMin), xMax * 1.05, M.left, width - M.right);
  const y = linear(0, (ys.length ? Math.max(...ys) : 1) * 1.1, height - M.bottom, M.top);
  const body = s("g", null, axes(x, y, width, height, { xLabel, yLabel }));
  series.forEach((sr, i) => {
    const cls = `series series-${i % 8}`;
    const ok = sr.points.filter((p) => !p.oom).sort((a, b) => a.x - b.x);
    if (ok.length > 1) body.append(s("polyline", { class: `${cls} line`, points: ok.map((p) => `${x(p.x)},${y(p.y)}`).join(" ") }));
    for (const p of ok) {
      const g = s("g", { class: cls });
      if (p.low !== undefined && p.high !== undefined) {
        g.append(s("line", { x1: x(p.x), y1: y(p.low), x2: x(p.x), y2: y(p.high), class: "whisker" }));
      }
      g.append(s("circle", { cx: x(p.x), cy: y(p.y), r: 4 }, s("title", null, `${sr.name} @ ${num(p.x, 0)}: ${num(p.y)}`)));
      body.append(g);
    }
    for (const p of sr.points.filter((q) => q.oom)) {
      const py = height - M.bottom - 10 - i * 12;
      body.append(s("text", { x: x(p.x), y: py, class: `${cls} oom-mark`, "text-anchor": "middle" },
        `✕ ${oomLabel}`, s("title", null, `${sr.name} @ ${num(p.x, 0)}: ${oomLabel}`)));
    }
  });
  const legend = h("ul", { class: "legend" }, series.map((sr, i) =>
    h("li", null, h("span", { class: `swatch series-${i % 8}`, "aria-hidden": "true" }), sr.name)));
  const desc = series.map((sr) => `${sr.name}: ` + sr.points.map((p) => `${num(p.x, 0)} → ${p.oom ? oomLabel : num(p.y)}`).join("; ")).join(". ");
  return figure(title, desc, width, height, body, legend);
}

/**
 * Options as points (x: time, y: cost) with error bars from their bands, the frontier (the
 * options no other beats on both) joined by a line. points: [{x, y, xLow, xHigh, yLow, yHigh,
 * label, detail, frontier}] (detail: said in the point's tooltip and the figure's description).
 */
export function frontierChart(points, { width = 640, title, xLabel, yLabel, xFmt = num, yFmt = num }) {
  const height = 340;
  const lo = (k, kk) => Math.min(...points.map((p) => p[kk] ?? p[k]));
  const hi = (k, kk) => Math.max(...points.map((p) => p[kk] ?? p[k]));
  const scale = (a, b, r0, r1) => (a > 0 && b / a > 20 ? logScale(a / 1.2, b * 1.2, r0, r1) : linear(Math.min(0, a), b * 1.08 || 1, r0, r1));
  const x = scale(lo("x", "xLow"), hi("x", "xHigh"), M.left, width - M.right);
  const y = scale(lo("y", "yLow"), hi("y", "yHigh"), height - M.bottom, M.top);
  const body = s("g", null, axes(x, y, width, height, { xLabel, yLabel, xFmt, yFmt }));
  const front = points.filter((p) => p.frontier).sort((a, b) => a.x - b.x);
  if (front.length > 1) body.append(s("polyline", { class: "frontier-line", points: front.map((p) => `${x(p.x)},${y(p.y)}`).join(" ") }));
  points.forEach((p) => {
    const g = s("g", { class: p.frontier ? "point on-frontier" : "point" });
    if (p.xLow !== undefined && p.xHigh !== undefined) g.append(s("line", { x1: x(p.xLow), y1: y(p.y), x2: x(p.xHigh), y2: y(p.y), class: "whisker" }));
    if (p.yLow !== undefined && p.yHigh !== undefined) g.append(s("line", { x1: x(p.x), y1: y(p.yLow), x2: x(p.x), y2: y(p.yHigh), class: "whisker" }));
    g.append(s("circle", { cx: x(p.x), cy: y(p.y), r: p.frontier ? 6 : 4 },
      s("title", null, `${p.label}${p.detail ? ` (${p.detail})` : ""}: ${xFmt(p.x)}, ${yFmt(p.y)}`)));
    const right = x(p.x) > width * 0.7;  // labels near the right edge go to the left of their point
    g.append(s("text", { x: x(p.x) + (right ? -8 : 8), y: y(p.y) - 8, class: "point-label", "text-anchor": right ? "end" : "start" }, p.label));
    body.append(g);
  });
  const desc = points.map((p) => `${p.label}${p.detail ? ` (${p.detail})` : ""}: ${xFmt(p.x)}, ${yFmt(p.y)}${p.frontier ? " (frontier)" : ""}`).join("; ");
  return figure(title, desc, width, height, body, null);
}
