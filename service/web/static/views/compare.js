// Compare view: built in the next step against GET /v1/compare.
import { h } from "../dom.js";
import { t } from "../i18n.js";

export async function render(root) {
  root.append(h("h1", null, t("compare_title")), h("p", null, "GET /v1/compare is not available yet."));
}
