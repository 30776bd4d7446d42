// roller's capture viewer: vanilla JS over the JSON inlined in #capture-data.
// Rendering is lazy: the agent tree, call rows and timeline are built at load; a call's
// detail only when it is selected, and each request item's body only when opened.
// A call's request names its values by their place in data.values, where each distinct
// value is stored once (a harness resends its transcript on every call); a relation is a
// row of such places, one per field of data.relations.fields (those it names `literal`
// written as they are; an evidence entry a row of places of the fields `nested` names).
// A tool call names its result by the id data.results holds it under; a request's items
// are given as the places the same agent's previous call began with, then its own.
"use strict";
(function () {
  const main = document.getElementById("capture-data");
  const data = JSON.parse(main.textContent);
  main.remove();
  // The calls, the relations' rows and the value table come in parts, each parsed on its
  // own (one string of a long capture's data would be more than V8 makes), then dropped.
  for (const part of document.querySelectorAll("script.capture-part")) {
    const piece = JSON.parse(part.textContent);
    const into = part.dataset.key.split(".").reduce((o, k) => o[k], data);
    if (Array.isArray(piece)) for (const x of piece) into.push(x);
    else Object.assign(into, piece);
    part.remove();
  }
  const calls = data.calls;
  const values = data.values;
  // Tool results are rows [tool-call id, call id, result], written with the call whose
  // input first carried them (after the call that asked): each tool call gets its own.
  const results = new Map(data.results.map(([id, call, result]) => [id, [call, result]]));
  for (const c of Object.values(calls)) {
    for (const t of c.tool_calls) {
      const r = results.get(t.result_id);
      delete t.result_id;
      t.result_in = r ? r[0] : null;
      t.result = r ? r[1] : null;
    }
  }
  delete data.results;
  // A call's item list names the places the call `from` began with (`keep` of them),
  // then its own (`refs`), its tags as runs: expanded in page order, `from` first.
  for (const id of data.order) {
    const req = calls[id].request;
    const it = req.items;
    if (!it || Array.isArray(it)) continue;
    const refs = it.from ? calls[it.from].request.items.slice(0, it.keep).map((i) => i.ref) : [];
    for (const r of it.refs) refs.push(r);
    const tags = [];
    for (const [tag, n] of it.tags) for (let k = 0; k < n; k++) tags.push(tag);
    req.items = refs.map((ref, i) => ({ tag: tags[i], ref }));
  }
  const field = Object.fromEntries(data.relations.fields.map((f, i) => [f, i]));
  const literal = new Set(data.relations.literal);
  const nested = data.relations.nested;
  // A row gives -1 for a field, or an evidence entry, that the row before holds.
  let before = null;
  data.relations.rows = data.relations.rows.map((row) => {
    const full = before === null ? row : row.map((v, i) => (literal.has(data.relations.fields[i]) ? v : v === -1 ? before[i] : Array.isArray(v) ? v.map((e, j) => (e === -1 ? before[i][j] : e)) : v));
    before = full;
    return full;
  });
  const entry = (f, e) => (Array.isArray(e) ? Object.fromEntries(nested[f].map((k, j) => [k, values[e[j]]])) : values[e]);
  const relation = (row) => Object.fromEntries(data.relations.fields.map((f, i) => [f, literal.has(f) ? row[i] : Array.isArray(row[i]) ? row[i].map((e) => entry(f, e)) : values[row[i]]]));
  const people = new Map(data.participants.map((p) => [p.participant_id, p]));
  const $ = (id) => document.getElementById(id);
  let selectedAgent = null;
  let selectedCall = null;
  let searchIndex = null; // call id -> its own fields' text, lower case
  let valueText = null; // each value's text, lower case

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
    return node;
  }
  const badge = (v) => el("span", { class: "badge s-" + v }, v);
  const tok = (n) => (n === null || n === undefined ? "?" : n >= 1000 ? (n / 1000).toFixed(1) + "k" : String(n));
  const json = (v) => JSON.stringify(v, null, 2);
  const label = (p) => p.role + (p.name ? " (" + p.name + ")" : "") + " " + p.participant_id.slice(-4);

  function summary() {
    const s = data.summary;
    $("summary").append(
      el("h1", {}, "capture ", data.attempt_dir),
      el("div", {},
        `${s.harness} ${s.harness_version || ""} · sample ${s.sample_id} · attempt ${s.attempt} · ${s.calls} calls · ${s.participants} agents · ${s.relations} relations · ${tok(s.input_tokens)}→${tok(s.output_tokens)} tokens · ${s.elided_blobs} base64 blob(s) elided `,
        badge(s.execution_status), badge(s.capture_status),
        s.unattributed_calls ? badge("unattributed") : null,
        data.capture_errors.length ? el("span", { class: "badge s-failed" }, data.capture_errors.map((e) => e.code).join(", ")) : null));
  }

  function linkView(p) {
    if (!p.links.length) return null;
    const box = el("details", {}, el("summary", {}, p.links.length + " link(s)"));
    for (const l of p.links) {
      const row = el("div", {}, l.type, badge(l.status), l.tool_call_id ? " " + l.tool_call_id : "");
      if (l.source_call_id) row.append(" from ", callRef(l.source_call_id));
      if (l.target_call_id) row.append(" into ", callRef(l.target_call_id));
      for (const e of l.evidence) row.append(el("div", {}, "evidence: " + e.source + (e.ref ? " #" + e.ref : "") + (e.retained ? "" : " (not retained)")));
      if (l.note) row.append(el("div", {}, "note: " + l.note));
      box.append(row);
    }
    return el("div", { class: "links" }, box);
  }

  function agentNode(p) {
    const t = p.subtree_tokens;
    const head = el("div", { class: "agent", "data-participant": p.participant_id, on: { click: (e) => { e.stopPropagation(); selectAgent(p.participant_id); } } },
      el("b", {}, label(p)), badge(p.state),
      el("div", { class: "tok" }, `${p.call_ids.length} call(s) · own ${tok(p.tokens.input)}→${tok(p.tokens.output)} · subtree ${tok(t.input)}→${tok(t.output)}`),
      linkView(p));
    const kids = data.participants.filter((q) => q.parent_participant_id === p.participant_id && q.role === "child");
    const box = el("div", {}, head);
    if (kids.length) box.append(el("div", { class: "children" }, ...kids.map(agentNode)));
    return box;
  }

  function tree() {
    const roots = data.participants.filter((p) => p.role === "root" || !people.has(p.parent_participant_id));
    $("tree").append(...roots.map(agentNode));
    const orphans = data.order.filter((id) => !calls[id].participant_id);
    if (orphans.length) {
      $("tree").append(el("div", { class: "agent", "data-participant": "", on: { click: () => selectAgent("") } }, el("b", {}, "unattributed"), badge("unattributed"), el("div", { class: "tok" }, orphans.length + " call(s)")));
    }
  }

  function callRow(c) {
    const tools = c.tool_calls.map((t) => t.name).join(", ");
    return el("div", { class: "call", "data-call": c.call_id, on: { click: () => selectCall(c.call_id) } },
      el("b", {}, "#" + c.sequence), " ", c.kind !== "generation" ? c.kind + " " : "", c.model || "?",
      " ", el("span", { class: "tok" }, `${tok(c.input_tokens)}→${tok(c.output_tokens)}`),
      badge(c.statuses.execution), badge(c.statuses.export),
      tools ? el("div", { class: "tools" }, "tools: " + tools) : null);
  }

  function showCalls(ids, title) {
    const box = $("calls");
    box.replaceChildren(el("h3", {}, title));
    for (const id of ids) if (calls[id]) box.append(callRow(calls[id]));
    if (!ids.length) box.append(el("p", { class: "hint" }, "No calls."));
  }

  function selectAgent(id) {
    selectedAgent = id;
    for (const n of document.querySelectorAll(".agent")) n.classList.toggle("selected", n.dataset.participant === id);
    const ids = id ? people.get(id).call_ids : data.order.filter((c) => !calls[c].participant_id);
    showCalls(ids, id ? label(people.get(id)) + " — calls" : "unattributed calls");
  }

  function callRef(id) {
    const c = calls[id];
    return el("a", { class: "ref", on: { click: (e) => { e.preventDefault(); e.stopPropagation(); reveal(id); } } }, c ? "#" + c.sequence : id);
  }

  function reveal(id) {
    const c = calls[id];
    if (!c) return;
    if (c.participant_id !== selectedAgent) selectAgent(c.participant_id || "");
    selectCall(id);
  }

  function lazyBlock(title, value, cls) {
    const d = el("details", { class: "item " + (cls || "") }, el("summary", {}, title));
    d.addEventListener("toggle", () => { if (d.open && d.children.length === 1) d.append(el("pre", {}, typeof value === "string" ? value : json(value))); }, { once: false });
    return d;
  }

  function itemTitle(item, i) {
    const v = values[item.ref];
    let what = typeof v === "string" ? "text" : v && (v.role || v.type) || "item";
    if (v && v.type && v.role) what = v.role + " " + v.type;
    let text = "";
    const content = v && (v.content !== undefined ? v.content : v.parts);
    if (typeof content === "string") text = content;
    else if (Array.isArray(content)) text = content.map((p) => (p && (p.text || p.type || Object.keys(p)[0])) || "").join(" | ");
    else if (typeof v === "string") text = v;
    return `[${i}] ${what}: ${text.slice(0, 120)}`;
  }

  function detail(c) {
    const box = $("detail");
    box.replaceChildren();
    const p = c.participant_id ? people.get(c.participant_id) : null;
    box.append(el("h2", {}, `#${c.sequence} ${c.protocol || "?"} ${c.model || "?"}`, " ", p ? "· " + label(p) : "· unattributed"));
    const st = el("div", {});
    for (const [k, v] of Object.entries(c.statuses)) st.append(k + ":", badge(v), " ");
    if (c.export_blocked_by.length) st.append(" blocked by " + c.export_blocked_by.join(", "));
    box.append(st, el("div", { class: "tok" }, `tokens ${tok(c.input_tokens)}→${tok(c.output_tokens)} · ${c.start_ms} → ${c.end_ms} ms · HTTP ${c.http_status} ${c.outcome} · response ${c.response_id || "-"} · finish ${c.finish_reason || "-"}`));
    if (c.errors.length) box.append(el("div", { class: "s-failed" }, "errors: " + c.errors.map((e) => e.code + ": " + e.message).join("; ")));
    const mine = (row, f) => field[f] !== undefined && values[row[field[f]]] === c.call_id;
    const rels = data.relations.rows.filter((row) => mine(row, "source_call_id") || mine(row, "target_call_id")).map(relation);
    if (rels.length) {
      box.append(el("h3", {}, "Relations"));
      for (const r of rels) {
        const row = el("div", { class: "relation" }, r.type, badge(r.status), " ");
        if (r.source_call_id) row.append("from ", callRef(r.source_call_id), " ");
        if (r.target_call_id) row.append("into ", callRef(r.target_call_id), " ");
        if (r.child_participant_id) row.append("child ", el("a", { class: "ref", on: { click: () => selectAgent(r.child_participant_id) } }, r.child_participant_id));
        box.append(row);
      }
    }
    box.append(el("h3", {}, "Request"));
    const req = c.request;
    if (c.diff) box.append(el("div", { class: "diff" }, "vs previous call ", callRef(c.diff.previous_call_id), `: ${c.diff.same} same, ${c.diff.from_output} from its output, ${c.diff.new} new, ${c.diff.removed} removed` + (c.diff.system_changed ? ", system prompt changed" : "")));
    if (req.raw !== undefined) box.append(lazyBlock("request body (no item list)", values[req.raw]));
    else {
      const system = values[req.system], tools = values[req.tools];
      if (system !== null && system !== undefined) box.append(lazyBlock("system", system));
      req.items.forEach((item, i) => box.append(lazyBlock(itemTitle(item, i), values[item.ref], "tag-" + item.tag)));
      if (tools) box.append(lazyBlock(`tool definitions (${Array.isArray(tools) ? tools.length : "?"})`, tools));
      box.append(lazyBlock("other request fields", values[req.config]));
    }
    box.append(el("h3", {}, "Output" + (c.output_complete ? "" : " (incomplete)")));
    for (const t of c.tool_calls) {
      const row = el("div", { class: "tools" }, "tool call " + t.name + " " + (t.id || ""), " result: ");
      row.append(t.result_in ? callRef(t.result_in) : "not seen in a later input");
      box.append(row);
      if (t.result_in) box.append(lazyBlock(`result of ${t.name} ${t.id || ""}`, t.result, "tool-result"));
    }
    box.append(lazyBlock("reassembled output", c.output));
    if (c.provider_error) box.append(lazyBlock("provider error", c.provider_error));
    box.append(lazyBlock("attribution", c.attribution));
  }

  function selectCall(id) {
    selectedCall = id;
    for (const n of document.querySelectorAll(".call")) n.classList.toggle("selected", n.dataset.call === id);
    for (const n of document.querySelectorAll(".bar")) n.classList.toggle("selected", n.dataset.call === id);
    detail(calls[id]);
  }

  function timeline() {
    const all = data.order.map((id) => calls[id]).filter((c) => c.start_ms !== null);
    const end = Math.max(1, ...all.map((c) => c.end_ms || c.start_ms));
    const lanes = data.participants.map((p) => [p.participant_id, label(p), p.call_ids]);
    const orphans = data.order.filter((id) => !calls[id].participant_id);
    if (orphans.length) lanes.push(["", "unattributed", orphans]);
    for (const [pid, name, ids] of lanes) {
      const lane = el("div", { class: "lane", "data-lane": pid }, el("span", { class: "lane-label", title: pid }, name));
      for (const id of ids) {
        const c = calls[id];
        if (!c || c.start_ms === null) continue;
        const left = (100 * c.start_ms) / end;
        const width = (100 * Math.max((c.end_ms || c.start_ms) - c.start_ms, 0)) / end;
        lane.append(el("div", { class: "bar" + (c.statuses.execution !== "completed" ? " failed" : ""), "data-call": id, title: `#${c.sequence} ${c.model}`, style: `left:${left}%;width:${width}%`, on: { click: () => reveal(id) } }));
      }
      $("timeline").append(lane);
    }
  }

  function search(q) {
    q = q.trim().toLowerCase();
    if (!searchIndex) {
      // A call's own fields, its request by item tags only; its request's values are
      // searched once each in the table, however many calls name them.
      const own = (k, v) => (k === "request" ? (v.items || []).map((i) => i.tag) : v);
      searchIndex = new Map(data.order.map((id) => [id, JSON.stringify(calls[id], own).toLowerCase()]));
      valueText = values.map((v) => JSON.stringify(v).toLowerCase());
    }
    if (!q) { $("search-count").textContent = ""; if (selectedAgent !== null) selectAgent(selectedAgent); return; }
    const found = new Set();
    valueText.forEach((t, i) => { if (t.includes(q)) found.add(i); });
    const named = (r) => (r.items ? r.items.some((i) => found.has(i.ref)) : false) || Object.entries(r).some(([k, v]) => k !== "items" && found.has(v));
    const hits = data.order.filter((id) => searchIndex.get(id).includes(q) || named(calls[id].request));
    $("search-count").textContent = hits.length + " call(s) match";
    showCalls(hits, `search: ${q}`);
  }

  summary();
  tree();
  timeline();
  $("search").addEventListener("input", (e) => search(e.target.value));
  const root = data.participants.find((p) => p.role === "root");
  if (root) selectAgent(root.participant_id);
})();
