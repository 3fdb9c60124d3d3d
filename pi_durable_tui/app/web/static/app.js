// The pidurable web page (issue 15): the same wire as an attached terminal, over a WebSocket.
//
// It says hello, keeps a mirror of the followed conversation (a snapshot, then
// each commit's entries and document operations, app/_wire.py), and derives
// what it shows from the mirror as app/screen/_blocks.py does for a terminal:
// the transcript (Markdown), the streamed message, tool cards, the task tree,
// the queue, a pending approval with its choices, the status and the footer.
// Everything it does is a `call` the host runs through its harness; the effect
// comes back as commits. A subagent's entry in the task tree opens that
// conversation's transcript, as the terminal's task tree does: the page sends
// `follow` (the message an attached terminal's feed sends) and the host answers
// with that conversation's snapshot; "Back to main" follows the root again.
// Prompts, Esc and decisions act on the conversation shown. Untrusted text is put in with textContent only (and
// PiMarkdown builds nodes, never HTML), after its control characters are gone.
// When the host stops (`bye`: it closed; `stopped`: its store failed) nothing more
// can run, so the page says so and shuts its input (`shut`): the box keeps what was
// typed, read-only, and no button or key sends anything. A call made while the
// socket is down fails at once, so a prompt's text comes back into the box.
"use strict";

(() => {
  const clean = PiMarkdown.clean;
  const $ = (id) => document.getElementById(id);
  const mirror = { seq: 0, conversation: 0, entries: [], hasOlder: false, docs: {}, tasks: [] };
  const rendered = new Map(); // block key -> { sig, node }
  const pending = new Map(); // call id -> [resolve, reject]
  let socket = null;
  let nextCall = 1;
  let root = 0; // the main conversation (welcome.root)
  let ended = false;
  let stopped = "";  // why nothing runs on: the host closed, or its store failed (issue 12)
  let scheduled = false;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = clean(text);
    return node;
  }

  // -- the document operations of DESIGN.md section 4 --

  function applyOps(value, ops) {
    let root = value;
    for (const op of ops) {
      const path = op.path || [];
      const insert = op.insert || [];
      if (!path.length) {
        if (op.op === "set") root = structuredClone(op.value);
        else if (op.op === "append") root += op.text;
        else if (op.op === "splice") root.splice(op.index, op.remove || 0, ...insert);
        continue;
      }
      let parent = root;
      for (let i = 0; i < path.length - 1; i += 1) parent = parent[path[i]];
      const key = path[path.length - 1];
      if (op.op === "set") parent[key] = structuredClone(op.value);
      else if (op.op === "delete") { if (Array.isArray(parent)) parent.splice(key, 1); else delete parent[key]; }
      else if (op.op === "append") parent[key] += op.text;
      else if (op.op === "splice") parent[key].splice(op.index, op.remove || 0, ...insert);
    }
    return root;
  }

  function apply(message) {
    if (message.t === "snapshot") {
      mirror.seq = message.seq; mirror.conversation = message.conversation;
      mirror.entries = message.entries || []; mirror.hasOlder = !!message.has_older;
      mirror.docs = message.docs || {}; mirror.tasks = message.tasks || [];
      rendered.clear(); $("transcript").replaceChildren();
    } else if (message.t === "tasks") {
      mirror.tasks = message.tasks || [];
    } else if (message.t === "commit") {
      if (message.seq <= mirror.seq) return;
      for (const change of message.docs || []) {
        if (change.retired) delete mirror.docs[change.kind];
        else mirror.docs[change.kind] = applyOps(structuredClone(mirror.docs[change.kind] ?? null), change.ops);
      }
      mirror.entries.push(...(message.entries || []));
      mirror.seq = message.seq;
    }
    schedule();
  }

  // -- blocks, as app/screen/_blocks.py derives them --

  const obj = (v) => (v && typeof v === "object" && !Array.isArray(v) ? v : {});
  const messageOf = (entry) => obj((entry.model || [])[0]);
  function textOf(message) {
    const c = message.content;
    if (typeof c === "string") return c;
    return (c || []).filter((b) => b && b.type === "text").map((b) => b.text || "").join("");
  }

  function assistantBlocks(key, message, streaming) {
    const content = (message.content || []).filter((b) => b && typeof b === "object");
    const thinking = content.filter((b) => b.type === "thinking").map((b) => b.thinking || "");
    const calls = content.filter((b) => b.type === "tool_call");
    const text = textOf(message);
    const out = [];
    if (message.stop_reason === "error") out.push({ key, kind: "error", text: message.error_message || "Model error", detail: text });
    else if (text || thinking.length || !calls.length) {
      out.push({ key, kind: "assistant", text, thinking, streaming, mark: message.stop_reason === "aborted" ? "aborted" : "" });
    }
    const notRun = !streaming && message.stop_reason !== "toolUse";
    for (const call of calls) {
      const args = obj(call.arguments);
      out.push({
        key: `${key}/${call.id}`, kind: "tool", callId: String(call.id), name: String(call.name || ""),
        status: streaming ? "streaming" : notRun ? "not_run" : "pending",
        argument: String(args.command ?? args.path ?? (Object.keys(args).length ? JSON.stringify(args) : "")),
        output: "", error: notRun ? "Not run: the answer was interrupted." : "",
      });
    }
    return out;
  }

  function fillResult(card, entry) {
    const message = messageOf(entry);
    const data = obj(entry.data);
    const errors = (data.diagnostics || []).filter((d) => d && d.severity === "error");
    let status = "done";
    if (message.is_error) {
      const codes = new Set(errors.map((d) => d.code));
      status = codes.has("interrupted") ? "interrupted" : codes.has("aborted") ? "aborted" : "error";
    }
    let text = textOf(message);
    const marker = text.lastIndexOf("<harness>\n");
    if (marker >= 0 && text.trimEnd().endsWith("</harness>")) text = text.slice(0, marker).replace(/\n+$/, "");
    const details = obj(message.details);
    return { ...card, status, output: text || card.output, error: errors.map((d) => d.message || "").join("; "),
      exit: details.exit_code ?? null };
  }

  function deriveBlocks() {
    const blocks = [];
    const cards = new Map();
    for (const entry of mirror.entries) {
      const message = messageOf(entry);
      const key = `e${entry.id}`;
      if (entry.kind === "pi.user") blocks.push({ key, kind: "user", text: textOf(message) });
      else if (entry.kind === "pi.assistant") {
        for (const block of assistantBlocks(key, message, false)) {
          if (block.kind === "tool") cards.set(block.callId, blocks.length);
          blocks.push(block);
        }
      } else if (entry.kind === "pi.tool-result") {
        const at = cards.get(String(message.tool_call_id || ""));
        if (at !== undefined) blocks[at] = fillResult(blocks[at], entry);
      } else if (entry.kind === "pi.compaction") blocks.push({ key, kind: "compaction", text: "[compacted] " + textOf(message).replace(/<\/?summary>/g, "") });
      else if (entry.kind === "pi.reset") blocks.push({ key, kind: "reset", text: "[new context]" });
    }
    const live = obj(mirror.docs["pi.live"]);
    const generation = obj(live.generation);
    if (generation.message && typeof generation.message === "object") {
      for (const block of assistantBlocks("live", generation.message, true)) blocks.push(block);
    }
    for (const slot of live.tools || []) {
      if (!slot || slot.status === "done") continue;
      const at = cards.get(String(slot.call_id));
      if (at !== undefined && blocks[at].status !== "done") {
        blocks[at] = { ...blocks[at], status: slot.status === "running" ? "running" : "pending", output: String(slot.output || "") };
      }
    }
    return blocks;
  }

  function blockNode(block) {
    const node = el("div", `block ${block.kind}${block.streaming ? " streaming" : ""}`);
    node.dataset.key = block.key;
    if (block.kind === "assistant") {
      for (const part of block.thinking || []) if (part) node.appendChild(el("div", "thinking", part));
      node.appendChild(PiMarkdown.render(block.text));
      if (block.mark) node.appendChild(el("span", "muted", `[${block.mark}]`));
    } else if (block.kind === "tool") {
      node.dataset.status = block.status;
      const head = el("div", "head", `${block.name} ${block.argument}`);
      head.appendChild(el("span", "state", block.status + (block.exit !== null && block.exit !== undefined ? ` (exit ${block.exit})` : "")));
      node.appendChild(head);
      if (block.output) node.appendChild(el("pre", "output", block.output));
      if (block.error) node.appendChild(el("div", "muted", block.error));
    } else {
      node.textContent = clean(block.text);
      if (block.detail) node.appendChild(el("div", "muted", block.detail));
    }
    return node;
  }

  // -- rendering (at most once a frame) --

  function schedule() {
    if (!scheduled) { scheduled = true; requestAnimationFrame(render); }
  }

  function render() {
    scheduled = false;
    const wrap = $("transcript-wrap");
    const pinned = wrap.scrollHeight - wrap.scrollTop - wrap.clientHeight < 40;
    const transcript = $("transcript");
    const blocks = deriveBlocks();
    const keep = new Set();
    let cursor = transcript.firstChild;
    for (const block of blocks) {
      const sig = JSON.stringify(block);
      let item = rendered.get(block.key);
      if (!item || item.sig !== sig) {
        const node = blockNode(block);
        if (item) {
          if (cursor === item.node) cursor = node; // REMINDER: the cursor must stay a child
          item.node.replaceWith(node);
        }
        item = { sig, node };
        rendered.set(block.key, item);
      }
      keep.add(block.key);
      if (item.node !== cursor) transcript.insertBefore(item.node, cursor);
      else cursor = cursor.nextSibling;
    }
    for (const [key, item] of rendered) if (!keep.has(key)) { item.node.remove(); rendered.delete(key); }
    $("older").hidden = !mirror.hasOlder;
    renderApproval(); renderQueue(); renderTasks(); renderViewing(); renderStatus();
    if (pinned) wrap.scrollTop = wrap.scrollHeight;
  }

  let shownApproval = null;
  function renderApproval() {
    const live = obj(mirror.docs["pi.live"]);
    const slot = (live.tools || []).find((s) => s && obj(s.approval).request && !("decision" in obj(s.approval)));
    const panel = $("approval");
    if (!slot) { panel.hidden = true; shownApproval = null; return; }
    const request = obj(slot.approval.request);
    const sig = JSON.stringify([slot.call_id, request]);
    panel.hidden = false;
    if (sig === shownApproval) return;
    shownApproval = sig;
    $("approval-tool").textContent = clean(request.tool || slot.name || "");
    $("approval-argument").textContent = clean(request.argument || "");
    $("approval-reason").textContent = clean(request.reason || "");
    $("approval-message").value = "";
    const choices = [["once", "Allow once"]];
    if (typeof request.suggestion === "string") {
      choices.push(["session", `Allow ${clean(request.suggestion)} in this session`]);
      if (!request.protected) choices.push(["project", "Always in this project"]);
    }
    choices.push(["deny", "Deny"]);
    const buttons = $("approval-buttons");
    buttons.replaceChildren();
    for (const [choice, label] of choices) {
      const button = el("button", choice === "deny" ? "danger" : "primary", label);
      button.type = "button";
      button.disabled = Boolean(stopped);
      button.dataset.choice = choice;
      button.addEventListener("click", () => {
        const message = choice === "deny" ? $("approval-message").value.trim() || null : null;
        call("decide", { call_id: String(slot.call_id), choice, message });
      });
      buttons.appendChild(button);
    }
  }

  function renderQueue() {
    const items = obj(mirror.docs["pi.inbox"]).items || [];
    const list = $("queue");
    list.replaceChildren();
    for (const item of items) {
      if (!item || item.mode === "write") continue;
      const text = typeof item.content === "string" ? item.content : textOf({ content: item.content });
      const li = el("li", "", `${item.mode === "steer" ? "steer" : "follow-up"}: ${text}`);
      const remove = el("button", "", "withdraw");
      remove.type = "button";
      remove.disabled = Boolean(stopped);
      remove.addEventListener("click", () => call("withdraw", { submission_id: item.id }));
      li.appendChild(remove);
      list.appendChild(li);
    }
    $("queue-panel").hidden = list.childElementCount === 0;
  }

  function taskList(nodes) {
    const ul = el("ul");
    for (const node of nodes || []) {
      const li = el("li", "", `${node.label} · ${node.status}${node.phase ? ` (${node.phase})` : ""}${node.background ? " · background" : ""}`);
      const conversation = Number(node.subagent_conversation_id) || 0;
      if (conversation && conversation !== mirror.conversation) {
        const open = el("button", "open-conversation", "open");
        open.type = "button";
        open.dataset.conversation = String(conversation);
        open.addEventListener("click", () => follow(conversation));
        li.appendChild(open);
      }
      if (node.children && node.children.length) li.appendChild(taskList(node.children));
      ul.appendChild(li);
    }
    return ul;
  }

  function renderTasks() {
    $("tasks").replaceChildren(...taskList(mirror.tasks).childNodes);
    $("tasks-panel").hidden = !mirror.tasks.length;
  }

  function renderViewing() {
    const other = Boolean(root && mirror.conversation && mirror.conversation !== root);
    $("viewing").hidden = !other;
    if (other) $("viewing-label").textContent = `Subagent conversation ${mirror.conversation}`;
  }

  function renderStatus() {
    const live = obj(mirror.docs["pi.live"]);
    const running = (live.tools || []).find((s) => s && s.status === "running");
    let status = "";
    if (stopped) status = stopped;
    else if (obj(live.generation).retry) status = `Retrying: ${clean(obj(live.generation).retry.error || "")}`;
    else if (running) status = `Running ${clean(running.name)}… (Esc to abort)`;
    else if ("run" in live) status = "Working… (Esc to abort)";
    $("status").textContent = status;
    document.body.dataset.busy = "run" in live && !stopped ? "yes" : "no";
    const agent = obj(mirror.docs["pi.agent"]);
    const model = obj(agent.model);
    $("footer").textContent = clean(`${model.provider ? `${model.provider}/${model.model_id}` : "no model"} · thinking ${agent.thinking_level || "off"}`);
  }

  function notice(level, text) {
    const li = el("li", level, text);
    const list = $("notices");
    list.appendChild(li);
    while (list.childElementCount > 4) list.firstChild.remove();
  }

  // -- the wire --

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  // Show another conversation: the host sends its snapshot, which replaces the mirror.
  function follow(conversation) {
    if (conversation && conversation !== mirror.conversation) send({ t: "follow", conversation });
  }

  function call(method, args = {}) {
    const id = nextCall++;
    return new Promise((resolve, reject) => {
      // REMINDER: a call sent nowhere would never be answered (a prompt's text lost).
      if (stopped) { reject(new Error(stopped)); return; }
      if (!socket || socket.readyState !== WebSocket.OPEN) {
        reject(new Error("not connected to the host: try again once it is back")); return;
      }
      pending.set(id, [resolve, reject]);
      send({ t: "call", id, method, args });
    }).catch((error) => { notice("warning", String(error.message || error)); return null; });
  }

  // The host stopped: say why where the status goes, and shut everything that acts.
  function shut(why) {
    if (stopped) return;
    stopped = why;
    document.body.dataset.stopped = "yes";
    const input = $("input");
    input.readOnly = true; // what was typed stays, to copy; nothing new goes in
    input.placeholder = why;
    for (const button of document.querySelectorAll("#composer button, #approval button, #queue button")) {
      button.disabled = true;
    }
    $("approval-message").readOnly = true;
    renderStatus();
  }

  function receive(message) {
    switch (message.t) {
      case "welcome":
        $("session").textContent = clean(`${message.cwd || ""} · ${message.session || ""}`);
        $("connection").textContent = `connected (host pid ${Number(message.host_pid) || "?"})`;
        root = Number(message.root) || 0;
        break;
      case "reply": {
        const waiting = pending.get(message.id);
        pending.delete(message.id);
        if (waiting) message.ok ? waiting[0](message.value) : waiting[1](new Error(clean(message.error)));
        break;
      }
      case "clients":
        $("connection").textContent = `connected · ${(message.clients || []).length} attached`;
        break;
      case "error": notice("warning", message.message || message.code); break;
      case "stopped":
        notice("error", clean(message.notice || ""));
        shut("Stopped: the session store cannot be written (see the notice)");
        break;
      case "bye":
        ended = true;
        $("connection").textContent = `the host stopped serving (${clean(message.reason)})`;
        shut("The session stopped: its host stopped serving it. Nothing committed is lost: " +
          "pidurable --continue in its directory (or pidurable serve -c) takes it up again.");
        break;
      default: apply(message);
    }
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/ws`);
    socket.addEventListener("open", () => {
      const hello = { t: "hello", v: 1, name: "web" };
      if (mirror.seq) hello.since = mirror.seq; // only what was missed, of what was shown
      if (mirror.conversation) hello.conversation = mirror.conversation;
      socket.send(JSON.stringify(hello));
    });
    socket.addEventListener("message", (event) => {
      try { receive(JSON.parse(event.data)); } catch (error) { notice("error", `unreadable message: ${error}`); }
    });
    socket.addEventListener("close", () => {
      for (const [, [, reject]] of pending) reject(new Error("the host is gone"));
      pending.clear();
      if (ended) return;
      $("connection").textContent = "disconnected; reconnecting…";
      setTimeout(connect, 2000);
    });
  }

  // -- input --

  async function submit(followUp) {
    const input = $("input");
    const text = input.value;
    if (stopped || !text.trim()) return;
    input.value = "";
    const done = await call("submit", { text, follow_up: followUp });
    if (done === null) input.value = text; // refused: give it back
  }

  async function abort() {
    if (stopped) return;
    const texts = await call("abort");
    if (Array.isArray(texts) && texts.length) {
      const input = $("input");
      input.value = [...texts.map(clean), input.value].filter(Boolean).join("\n");
    }
  }

  $("composer").addEventListener("submit", (event) => { event.preventDefault(); submit(false); });
  $("follow-up").addEventListener("click", () => submit(true));
  $("back").addEventListener("click", () => follow(root));
  $("abort").addEventListener("click", abort);
  $("older").addEventListener("click", async () => {
    const first = mirror.entries[0];
    if (!first) return;
    const page = await call("older", { before: first.id, count: 60 });
    if (page) { mirror.entries.unshift(...(page.entries || [])); mirror.hasOlder = !!page.has_older; schedule(); }
  });
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); submit(event.altKey); }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") { event.preventDefault(); abort(); }
  });

  // The token was in the address only to set the cookie: take it out of the URL bar and history.
  if (location.search.includes("token=")) history.replaceState(null, "", location.pathname);
  connect();
})();
