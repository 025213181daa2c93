// The catalog works without JavaScript; this only makes the preview live
// (results replace themselves as the form changes) and the copy button
// work.
document.documentElement.classList.add("js");
document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("[data-copy]")) {
    b.addEventListener("click", () => {
      const el = document.getElementById(b.dataset.copy);
      const range = document.createRange();
      range.selectNodeContents(el);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      if (navigator.clipboard) navigator.clipboard.writeText(el.textContent);
    });
  }
  const form = document.querySelector("form[data-live]");
  if (!form) return;
  let timer = null, seq = 0;
  const run = async () => {
    const mine = ++seq;
    const res = await fetch(form.action, {
      method: "POST",
      headers: {"Content-Type": "application/x-www-form-urlencoded"},
      body: new URLSearchParams(new FormData(form)),
    });
    if (mine !== seq) return;
    const doc = new DOMParser().parseFromString(await res.text(), "text/html");
    const next = doc.getElementById("preview-result");
    if (next) document.getElementById("preview-result").replaceWith(next);
    // Field errors move with the answer.
    for (const f of form.querySelectorAll(".field")) {
      const input = f.querySelector("[name]");
      const other = doc.querySelector(`[name="${CSS.escape(input.name)}"]`);
      const field = other && other.closest(".field");
      if (field) {
        f.className = field.className;
        const err = f.querySelector(".field-error"), nerr = field.querySelector(".field-error");
        if (err) err.remove();
        if (nerr) input.after(nerr);
        if (nerr) input.setAttribute("aria-invalid", "true"); else input.removeAttribute("aria-invalid");
      }
    }
  };
  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  form.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(run, 400); });
});
