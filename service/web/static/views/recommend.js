// Compare view: built in the next step against POST /v1/recommend.
import { h } from "../dom.js";
import { t } from "../i18n.js";

export async function render(root) {
  root.append(h("h1", null, t("recommend_title")), h("p", null, "POST /v1/recommend is not available yet."));
}
