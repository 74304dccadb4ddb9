// An output table wider than its box scrolls inside it; mark that box and say so below it.
function histtrimMarkScrolling() {
  document.querySelectorAll("div.cell_output div.output.text_html").forEach((box) => {
    const wide = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("scrolls", wide);
    let note = box.nextElementSibling;
    if (wide && !(note && note.classList.contains("scroll-note"))) {
      note = document.createElement("p");
      note.className = "scroll-note";
      note.textContent = "\u2194 this table is wider than the page: scroll it sideways";
      box.after(note);
    }
  });
}
window.addEventListener("load", histtrimMarkScrolling);
window.addEventListener("resize", histtrimMarkScrolling);

// A rule ID typed into the search field (KEEP-1, keep-1) lands on the rule's anchor.
(function histtrimRuleSearch() {
  if (!window.HISTTRIM_RULES || !/\/search\.html$/.test(window.location.pathname)) return;
  const query = (new URLSearchParams(window.location.search).get("q") || "").trim();
  const target = window.HISTTRIM_RULES[query.toUpperCase()];
  if (target) window.location.replace(target);
})();
