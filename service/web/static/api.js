// The page's only way to the service: the public JSON API under /v1, as any client calls it.

let apiKey = null;  // pasted by an admin; this module's memory is the only place it lives

/** Keep a pasted key for this tab's lifetime only (never localStorage, sessionStorage or a cookie). */
export function setKey(key) {
  apiKey = key ? key.trim() : null;
}

export function hasKey() {
  return apiKey !== null && apiKey !== "";
}

/** A problem+json refusal (RFC 9457), with the fields at fault from `errors[].loc`. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }

  /** [{field: "batch_size", msg}] for errors located in the body or query. */
  get fieldErrors() {
    return (this.problem.errors || []).map((e) => {
      const loc = (e.loc || []).filter((p) => p !== "body" && p !== "query");
      return { field: loc.join("."), msg: e.msg };
    });
  }
}

/** Call the API; JSON in and out; a non-2xx answer throws ApiError carrying the problem. */
export async function api(path, { method = "GET", body, auth = false } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (auth && apiKey) headers.Authorization = `Bearer ${apiKey}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { title: text.slice(0, 200) };
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

/** Every item of a cursor-paginated list. */
export async function listAll(path) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api(cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}
