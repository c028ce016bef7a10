// Where the page is: the view and its inputs live in location.hash, so every state is a link.

export const VIEW_NAMES = ["compare", "recommend", "estimate", "data", "gpus", "legend"];

/** The view and its parameters from location.hash: "#/gpus/nvidia-l40?x=1" -> ("gpus", ["nvidia-l40"], {x: 1}). */
export function parseHash(hash) {
  const raw = hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [view, ...rest] = path.split("/").filter(Boolean);
  return { view: VIEW_NAMES.includes(view) ? view : "compare", rest: rest.map(decodeURIComponent), params: new URLSearchParams(query) };
}

/** Change the hash without re-rendering (a view recording its inputs in the URL). */
export function setParams(view, params, rest = []) {
  const path = [view, ...rest.map(encodeURIComponent)].join("/");
  const q = params.toString();
  history.replaceState(null, "", `#/${path}${q ? `?${q}` : ""}`);
}

