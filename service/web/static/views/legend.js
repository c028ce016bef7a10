// Legend view (#/legend?term=published): what every provenance chip and band word on the page
// means, in one place; every chip links here with its own term highlighted.
import { add, h } from "../dom.js";
import { lang, t } from "../i18n.js";

/** Each term the page shows as a chip or a band word, with what it says about a number. */
export const TERMS = {
  en: [
    ["Estimates (memory, time, serving latencies)", [
      ["measured", "This exact configuration was measured on this GPU (the latest measured median of at least k runs)."],
      ["measured (thin)", "Measured, but on fewer runs than the k the service asks for: read it as one data point."],
      ["interpolated", "Fitted on this GPU's own measurements of nearby configurations."],
      ["transferred", "Fitted on another GPU's measurements and carried over (same architecture first, a wider band across architectures); the source GPUs are named."],
      ["published", "Anchored on a published external table (vendor or MLPerf results) and carried to this GPU by the published-table transfer: the most common label for GPUs nobody here has measured."],
      ["derived", "Depends on a catalog figure computed from a sibling GPU, not read from a datasheet."],
      ["spec", "The datasheet's peak figures with default efficiencies (a roofline): no measurement behind it."],
    ]],
    ["Catalog figures (Compare, GPU pages)", [
      ["datasheet", "Read from the vendor's datasheet, brief, whitepaper, an OEM sheet or a cloud's documentation (the source is linked)."],
      ["registry", "From the PCI ID registry."],
      ["unsourced", "Nobody publishes this figure: the value is empty, never guessed."],
    ]],
    ["Bands and ranks", [
      ["80% band", "The range the true value falls in 8 times out of 10, from the stated accuracy of the method (held-out errors)."],
      ["≈ best", "Within the error of the best option: the ratio to the best is inside the cross-GPU uncertainty, so the ranking between them is not certain."],
    ]],
  ],
  zh: [
    ["估算（显存、时间、推理延迟）", [
      ["measured", "在这块 GPU 上实测过这一配置（至少 k 次运行的最新实测中位数）。"],
      ["measured (thin)", "实测过，但运行次数少于服务要求的 k 次：只当作一个数据点。"],
      ["interpolated", "由这块 GPU 自己在相近配置上的实测拟合而来。"],
      ["transferred", "由另一块 GPU 的实测拟合后迁移而来（优先同架构，跨架构时区间更宽）；会注明来源 GPU。"],
      ["published", "以公开的外部数据表（厂商或 MLPerf 结果）为锚点，经公开数据迁移到这块 GPU：对没人实测过的 GPU 最常见。"],
      ["derived", "依赖由同系列 GPU 推算出的目录数值，而不是数据手册上的数。"],
      ["spec", "数据手册的峰值配合默认效率（屋顶线模型）：背后没有实测。"],
    ]],
    ["目录数值（对比、GPU 页面）", [
      ["datasheet", "取自厂商数据手册、产品简介、白皮书、OEM 规格表或云厂商文档（附来源链接）。"],
      ["registry", "取自 PCI ID 注册表。"],
      ["unsourced", "没有公开来源：数值留空，绝不猜测。"],
    ]],
    ["区间与排名", [
      ["80% band", "真实值十次中有八次落在这个范围内，依据方法的实测精度（留出误差）。"],
      ["≈ best", "与最佳方案的差距在误差之内：比值落在跨 GPU 不确定度内，两者的先后并不确定。"],
    ]],
  ],
};

export function termId(term) {
  return `term-${term.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "").toLowerCase() || "x"}`;
}

export async function render(root, { params }) {
  const wanted = params.get("term");
  add(root, h("h1", null, t("legend_title")), h("p", { class: "note" }, t("legend_intro")),
    TERMS[lang].map(([group, items]) => [h("h2", null, group),
      h("dl", { class: "legend-terms" }, items.map(([term, text]) => [
        h("dt", { id: termId(term), class: term === wanted ? "wanted" : null, tabindex: term === wanted ? "-1" : null },
          h("span", { class: `prov prov-${term.replace(/\W/g, "")}` }, term)),
        h("dd", null, text)]))]));
  if (wanted) queueMicrotask(() => document.getElementById(termId(wanted))?.scrollIntoView({ block: "center" }));
}
