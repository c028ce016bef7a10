// Number and unit formatting in the page's language. Units follow the API's names:
// bytes (shown in GiB for memory, GB for marketed figures), GB/s, TFLOP/s, W.
import { lang } from "./i18n.js";

const locale = lang === "zh" ? "zh-CN" : "en";

export function num(x, digits = 1) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  return new Intl.NumberFormat(locale, { maximumFractionDigits: digits }).format(x);
}

export const GIB = 2 ** 30;

export function gib(bytes, digits = 1) {
  return bytes === null || bytes === undefined ? "—" : `${num(bytes / GIB, digits)} GiB`;
}

export function seconds(s) {
  if (s === null || s === undefined) return "—";
  if (s < 1) return `${num(s * 1000, 1)} ms`;
  if (s < 120) return `${num(s, 2)} s`;
  if (s < 7200) return `${num(s / 60, 1)} min`;
  if (s < 172800) return `${num(s / 3600, 1)} h`;
  return `${num(s / 86400, 1)} d`;
}

export function ms(x) {
  return x === null || x === undefined ? "—" : `${num(x, 1)} ms`;
}

export function when(iso) {
  if (!iso) return "—";
  return new Date(iso).toLocaleString(locale, { dateStyle: "medium", timeStyle: "short" });
}

export function band(b, f) {
  return b ? `${f(b.low)} – ${f(b.high)}` : "—";
}
