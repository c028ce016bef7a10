// The page's router: #/<view>?<params>. Each view renders itself from the public JSON API into
// <main>; the URL (hash) carries the view's inputs, so every state can be shared as a link.
import { h } from "./dom.js";
import { lang, t } from "./i18n.js";
import { problemBlock } from "./ui.js";
import { parseHash } from "./nav.js";

const VIEWS = {
  compare: () => import("./views/compare.js"),
  recommend: () => import("./views/recommend.js"),
  estimate: () => import("./views/estimate.js"),
  data: () => import("./views/data.js"),
  gpus: () => import("./views/gpus.js"),
  legend: () => import("./views/legend.js"),
};

let generation = 0;

async function route(event) {
  const mine = ++generation;
  const { view, rest, params } = parseHash(location.hash);
  for (const a of document.querySelectorAll("nav a[data-view]")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const main = document.getElementById("main");
  main.setAttribute("aria-busy", "true");
  main.replaceChildren(h("p", { class: "loading" }, t("loading")));
  try {
    const mod = await VIEWS[view]();
    const root = h("section", { class: `view view-${view}`, "data-view": view });
    // Charts are drawn for the space they get (a phone's width up to a readable maximum).
    const width = Math.max(320, Math.min(760, main.clientWidth || 760));
    await mod.render(root, { params, rest, width });
    if (mine !== generation) return;  // a newer navigation won
    main.replaceChildren(root);
    document.title = `${t(`nav_${view}`)} · ${t("title")}`;
    // after a navigation (not the first load), keyboard and screen-reader users land on the new view
    if (event) main.focus({ preventScroll: false });
  } catch (err) {
    if (mine !== generation) return;
    main.replaceChildren(problemBlock(err));
    if (!(err && err.problem)) console.warn(err);
  } finally {
    if (mine === generation) main.removeAttribute("aria-busy");
  }
}

function localiseChrome() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  document.getElementById("brand-title").textContent = t("title");
  document.getElementById("tagline").textContent = t("tagline");
  for (const a of document.querySelectorAll("nav a[data-view]")) a.textContent = t(`nav_${a.dataset.view}`);
}

localiseChrome();
window.addEventListener("hashchange", route);
route(null);
