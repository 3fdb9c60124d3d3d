// A small, safe Markdown renderer for the pidurable web page (issue 15).
//
// Untrusted text (the model's answers, tool output) is never parsed as HTML:
// this builds DOM nodes and puts every piece of text in with textContent /
// createTextNode, which is stronger than escaping HTML first (there is no
// HTML step at all, so nothing can be unescaped by mistake). What it knows:
// fenced code blocks (``` and ~~~), headings, bullet and numbered lists, block
// quotes, paragraphs, inline code, **bold** / __bold__, *emphasis* / _emphasis_,
// and links, whose target must be http: or https: (anything else, such as
// javascript:, stays plain text). Control characters are stripped first.
"use strict";

const PiMarkdown = (() => {
  // REMINDER: the same sequences app/_terminal_text.py strips (CSI, OSC/DCS/..., ESC x, C0/C1).
  const SEQUENCE = /(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x9c\n]*?(?:\x07|\x1b\\|\x9c|(?=\n)|$)|\x1b[\x20-\x2f]*[\x30-\x7e]?/g;
  const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

  function clean(text) {
    return String(text ?? "").replace(SEQUENCE, "").replace(CONTROL, "");
  }

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([A-Za-z0-9_+#.-]*).*$/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([\s\S]+?)\*\*|__([\s\S]+?)__|\*([^*\s](?:[^*]*[^*\s])?)\*|\b_([^_\s](?:[^_]*[^_\s])?)_\b|\[([^\]\n]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

  function el(tag, className) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    return node;
  }

  function safeUrl(url) {
    return /^https?:\/\//i.test(url) ? url : null;
  }

  function inline(text, parent) {
    let last = 0;
    INLINE.lastIndex = 0;
    const pattern = new RegExp(INLINE.source, "g"); // a fresh one: inline() recurses
    let m;
    while ((m = pattern.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      last = pattern.lastIndex;
      if (m[1] !== undefined) {
        const code = el("code");
        code.textContent = m[2].replace(/^ (.*) $/, "$1");
        parent.appendChild(code);
      } else if (m[3] !== undefined || m[4] !== undefined) {
        const strong = el("strong");
        inline(m[3] ?? m[4], strong);
        parent.appendChild(strong);
      } else if (m[5] !== undefined || m[6] !== undefined) {
        const em = el("em");
        inline(m[5] ?? m[6], em);
        parent.appendChild(em);
      } else if (m[7] !== undefined) {
        const href = safeUrl(m[8]);
        if (href === null) {
          parent.appendChild(document.createTextNode(m[0]));
        } else {
          const a = el("a");
          a.href = href;
          a.rel = "noopener noreferrer nofollow";
          a.target = "_blank";
          inline(m[7], a);
          parent.appendChild(a);
        }
      } else {
        const a = el("a");
        a.href = m[9];
        a.rel = "noopener noreferrer nofollow";
        a.target = "_blank";
        a.textContent = m[9];
        parent.appendChild(a);
      }
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function paragraph(lines, parent) {
    const p = el("p");
    lines.forEach((line, index) => {
      if (index) p.appendChild(el("br"));
      inline(line, p);
    });
    parent.appendChild(p);
  }

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || ITEM.test(line) || QUOTE.test(line);
  }

  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if ((m = FENCE.exec(line))) {
        const marker = m[1];
        const body = [];
        i += 1;
        while (i < lines.length && !(lines[i].trim().startsWith(marker) && lines[i].trim().replace(/[`~]/g, "") === "")) {
          body.push(lines[i]);
          i += 1;
        }
        i += 1; // the closing fence (or the end: an open fence runs to the end, as while streaming)
        const pre = el("pre");
        const code = el("code", m[2] ? `language-${m[2].replace(/[^A-Za-z0-9_+-]/g, "")}` : "");
        code.textContent = body.join("\n");
        pre.appendChild(code);
        parent.appendChild(pre);
      } else if ((m = HEADING.exec(line))) {
        const h = el(`h${Math.min(6, m[1].length + 2)}`);
        inline(m[2], h);
        parent.appendChild(h);
        i += 1;
      } else if ((m = ITEM.exec(line))) {
        const ordered = /\d/.test(m[2]);
        const list = el(ordered ? "ol" : "ul");
        if (ordered && parseInt(m[2], 10) !== 1) list.start = parseInt(m[2], 10);
        while (i < lines.length && (m = ITEM.exec(lines[i])) && /\d/.test(m[2]) === ordered) {
          const li = el("li");
          const body = [m[3]];
          i += 1;
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !ITEM.test(lines[i])) {
            body.push(lines[i].trim());
            i += 1;
          }
          inline(body.join(" "), li);
          list.appendChild(li);
        }
        parent.appendChild(list);
      } else if (QUOTE.test(line)) {
        const quoted = [];
        while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
          quoted.push(m[1]);
          i += 1;
        }
        const quote = el("blockquote");
        blocks(quoted, quote);
        parent.appendChild(quote);
      } else if (line.trim() === "") {
        i += 1;
      } else {
        const body = [];
        while (i < lines.length && lines[i].trim() !== "" && (body.length === 0 || !startsBlock(lines[i]))) {
          body.push(lines[i]);
          i += 1;
        }
        paragraph(body, parent);
      }
    }
  }

  /** Render Markdown `text` into a new element (a div), with no HTML parsing. */
  function render(text) {
    const root = el("div", "markdown");
    blocks(clean(text).split("\n"), root);
    return root;
  }

  return { render, clean };
})();
