/// The page's script: a presenter of the node's event stream, through the
/// API only (docs/API.md). Every text from the network goes into the page
/// with `textContent`; nothing here builds markup from a string.
extension WebPage {
    /// The whole script: the part below with the life of a message
    /// (WebPageScript+MessageLife.swift) in its place.
    static let script = mainScript.replacingOccurrences(of: "/*MESSAGE-LIFE*/", with: messageLifeScript)
        .replacingOccurrences(of: "/*FILES*/", with: filesScript)

    private static let mainScript = #"""
    "use strict";
    (function () {
      const params = new URLSearchParams(location.hash.slice(1));
      if (params.get("token")) { sessionStorage.setItem("peernode-token", params.get("token")); history.replaceState(null, "", "/"); }
      const token = sessionStorage.getItem("peernode-token") || "";
      const $ = (id) => document.getElementById(id);
      const list = $("messages"), scroller = $("scroller"), banner = $("banner"), notice = $("notice");
      const input = $("text"), convList = $("convs"), panel = $("panel"), panelList = $("panellist");
      const order = { sending: 0, stored: 1, delivered: 2, read: 3 };
      const HISTORY_PAGE = 50;
      let socket = null, backoff = 500, refs = 0, noticeTimer = 0, readTimer = 0, syncTimer = 0;
      const me = { id: "", fp: "", nick: "" };
      const convs = new Map();     // key ("#room", or "@" + id) -> conversation
      let open = sessionStorage.getItem("peernode-open") || "";
      let panelRef = null;         // the command whose answer the panel lists
      let before = null;           // cursor of the page before the oldest shown; null at the beginning
      const waiting = new Map();   // ref -> what its answer completes
      const pending = new Map();   // ref -> the li of a message being sent
      const mine = new Map();      // message id -> its status span
      const linked = new Set();

      // --- small helpers -------------------------------------------------
      // Text from the network is shown as the terminal shows it: control
      // characters as ^X and invisible or formatting ones (bidi overrides,
      // zero-width joiners…) as <U+XXXX>, so none can reorder or hide what
      // is around it. Every text the page shows goes through here.
      const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}]/gu;
      function inert(text) {
        return String(text).replace(INVISIBLE, (ch) => {
          const v = ch.codePointAt(0);
          if (v === 0x7f) return "^?";
          if (v < 0x20) return "^" + String.fromCharCode(v + 0x40);
          return "<U+" + v.toString(16).toUpperCase().padStart(4, "0") + ">";
        });
      }
      function setText(node, text) { node.textContent = inert(text); }
      function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) setText(e, text); return e; }
      function send(cmd, fields, then) {
        if (!socket || socket.readyState !== 1) { say("not connected to the node"); return null; }
        const ref = cmd.slice(0, 2) + (++refs);
        if (then) waiting.set(ref, then);
        socket.send(JSON.stringify(Object.assign({ cmd: cmd, ref: ref }, fields || {})));
        return ref;
      }
      function say(text) {
        setText(notice, text); notice.hidden = false;
        clearTimeout(noticeTimer); noticeTimer = setTimeout(() => { notice.hidden = true; }, 8000);
      }
      function label(nick, fp, m) {
        // As the terminal labels an author: nick⚠·fp✔(forked).
        const who = el("span", "nick", (nick || "") + (m.look_alike ? "⚠" : ""));
        who.append(el("span", "fp", (nick ? "·" : "") + (fp || "") + (m.trusted ? "✔" : "") + (m.forked ? "(forked)" : "")));
        if (m.look_alike) who.title = "this nick looks like another's";
        return who;
      }
      function clock(ts) { return (ts ? new Date(Number(ts)) : new Date()).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }); }
      function keyOf(m) { return m.room ? m.room : "@" + (m.author === me.id ? m.to : m.author); }
      function near() { return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40; }
      function toBottom() { scroller.scrollTop = scroller.scrollHeight; }
      function reading() { return document.visibilityState === "visible"; }

      // --- conversations -------------------------------------------------
      function conv(key) {
        let c = convs.get(key);
        if (!c) {
          c = { key: key, room: key.startsWith("#") ? key : "", with: key.startsWith("@") ? key.slice(1) : "", nick: "", fp: "", marks: {}, unread: 0, last: null, ts: 0, private: false };
          convs.set(key, c);
        }
        return c;
      }
      function convLabel(c) {
        if (c.room) return el("span", "", c.room);
        return label(c.nick, c.fp || c.with.slice(0, 8), c.marks);
      }
      function renderConvs() {
        const focused = document.activeElement && document.activeElement.closest("#convs") ? document.activeElement.parentElement.dataset.key : null;
        convList.textContent = "";
        const sorted = [...convs.values()].sort((a, b) => (b.ts - a.ts) || a.key.localeCompare(b.key));
        sorted.forEach((c, i) => {
          const li = el("li"); li.dataset.key = c.key;
          if (c.key === open) li.setAttribute("aria-current", "true");
          const b = el("button"); b.type = "button";
          const name = el("span", "convname");
          const title = el("span");
          title.append(convLabel(c));
          if (c.private && c.room) title.append(el("span", "lock", " (private)"));
          if (!c.room) title.append(el("span", "lock", " (direct)" + presenceMark(c.with)));
          name.append(title);
          if (c.unread > 0) name.append(el("span", "badge", (c.mentioned ? "@ " : "") + String(c.unread)));
          b.append(name);
          const p = el("div", "preview");
          // A file's line starts with ⎘, which many fonts lack: the list says "file" in words.
          const said = c.last && c.last.kind === "file" ? "file " + String(c.last.text || "").replace(/^⎘ /, "") : c.last && c.last.text;
          setText(p, c.last ? (c.last.kind === "action" || c.last.action === "yes" ? "* " : "") + (c.last.nick || c.last.fp || "") + ": " + said : "no messages yet");
          b.append(p);
          b.title = (i < 9 ? "Alt+" + (i + 1) + ": " : "") + (c.room || "direct messages");
          b.addEventListener("click", () => { openConv(c.key); closeSide(); input.focus(); });
          li.append(b); convList.append(li);
          if (focused === c.key) b.focus();
        });
        const total = sorted.reduce((n, c) => n + c.unread, 0);
        document.title = (total ? "(" + total + ") " : "") + "peernode";
      }
      function sortedKeys() { return [...convs.values()].sort((a, b) => (b.ts - a.ts) || a.key.localeCompare(b.key)).map((c) => c.key); }
      function noteLast(c, m) {
        const ts = Number(m.ts || 0);
        if (ts >= c.ts) { c.ts = ts; c.last = { nick: m.nick, fp: m.fp, text: m.text, kind: m.type === "file" ? "file" : m.kind, action: m.action }; }
        if (!c.room && m.author !== me.id) { c.nick = m.nick || c.nick; c.fp = m.fp || c.fp; c.marks = m; }
      }
      function openConv(key) {
        if (!key) return;
        open = key; sessionStorage.setItem("peernode-open", key);
        const c = conv(key);
        c.unread = 0; c.mentioned = false;
        $("room").textContent = "";
        $("room").append(convLabel(c));
        $("leavebtn").hidden = !c.room || c.room === "#general";
        $("whobtn").hidden = !c.room;
        list.textContent = ""; mine.clear(); before = null;
        $("start").hidden = true; $("older").hidden = true;
        renderConvs();
        loadHistory(false);
        markRead(true);
      }
      function target(c) { return c.room ? { room: c.room } : { with: c.with }; }
      // Read now (a conversation just opened), or once messages stop arriving
      // for 300 ms; either way the conversation that was open when they came.
      function markRead(now) {
        const c = convs.get(open);
        clearTimeout(readTimer);
        if (!c || !reading()) return;
        if (now) send("read", target(c)); else readTimer = setTimeout(() => send("read", target(c)), 300);
      }

      // --- messages ------------------------------------------------------
      function setStatus(span, state) {
        const now = span.dataset.state || "sending";
        if (order[state] >= order[now]) { span.dataset.state = state; span.textContent = state; }
      }
      function line(m) {
        const li = el("li", (m.kind === "action" || m.action === "yes" ? "action" : "") + (m.mention ? " mention" : ""));
        li.dataset.id = m.id || "";
        if (m.mention) li.title = "names you";
        li.append(el("span", "time", clock(m.ts)));
        li.append(label(m.nick, m.fp, m));
        if (m.reply_to) li.append(quoteOf(m));
        if (m.root) fileLine(li, m); else li.append(el("span", "text", m.text));
        decorate(li, m);
        if (m.author === me.id) {
          const s = el("span", "status", "stored"); s.dataset.state = "stored"; li.append(s); if (m.receipt) setStatus(s, m.receipt);
          if (m.id) mine.set(m.id, s);
        }
        return li;
      }
      function shown(id) { return id && list.querySelector('li[data-id="' + id + '"]'); }
      function arrived(m) {
        const key = keyOf(m), known = convs.has(key), c = conv(key), fresh = !c.ts || Number(m.ts || 0) >= c.ts;
        // A conversation new to the list: the node knows its name and marks.
        if (!known) send("rooms");
        noteLast(c, m);
        if (key === open) {
          if (!shown(m.id)) { const was = near(); list.append(line(m)); if (was) toBottom(); }
          if (m.author !== me.id) markRead();
        } else if (m.author !== me.id && fresh) {
          c.unread += 1;
          if (m.mention) c.mentioned = true;
        }
        renderConvs();
      }
      function loadHistory(older) {
        const c = convs.get(open); if (!c) return;
        if (older && (before === null || !$("older").hidden)) return;
        const fields = Object.assign(target(c), { limit: String(HISTORY_PAGE) });
        if (older) { fields.before = before; $("older").hidden = false; }
        const key = open, page = [];
        const ref = send("history", fields, (ok) => {
          // Everything above the reader changes at once and the view moves by
          // as much, so the message they were reading stays where it was.
          const height = scroller.scrollHeight, top = scroller.scrollTop;
          $("older").hidden = true;
          if (key !== open) return;
          // A conversation that is gone (a room left elsewhere): home instead.
          if (!ok && !older) { if (open !== "#general") { convs.delete(open); openConv("#general"); } return; }
          before = ok && ok.before ? ok.before : null;
          $("start").hidden = before !== null;
          const fresh = page.filter((m) => !shown(m.id)).map(line);
          if (older) {
            list.prepend(...fresh);
            scroller.scrollTop = top + (scroller.scrollHeight - height);
          } else {
            // Live messages that came while the page loaded stay after it.
            const live = [...list.children];
            list.textContent = ""; list.append(...fresh, ...live); toBottom();
            if (page.length) { noteLast(conv(key), page[page.length - 1]); renderConvs(); }
          }
          // Fill the window, so that scrolling up can ask for more.
          if (before !== null && scroller.scrollHeight <= scroller.clientHeight) loadHistory(true);
        });
        if (ref) waiting.set(ref + ":page", page);
      }
      scroller.addEventListener("scroll", () => { if (scroller.scrollTop < 60) loadHistory(true); });

      // --- panels: who, peers, search, help --------------------------------
      function showPanel(title, cmd, fields, then) {
        setText($("paneltitle"), title); panelList.textContent = ""; panel.hidden = false;
        panelRef = send(cmd, fields, then);
      }
      function closePanel() { panel.hidden = true; }
      $("panelclose").addEventListener("click", () => { closePanel(); input.focus(); });
      function who() {
        const c = convs.get(open); if (!c || !c.room) return;
        showPanel("People in " + c.room, "who", { room: c.room }, () => { if (!panelList.children.length) panelList.append(el("li", "muted", "nobody has posted here yet")); });
      }
      function peers() {
        showPanel("Peers", "peers", {}, () => { if (!panelList.children.length) panelList.append(el("li", "muted", "no peers known yet")); });
      }
      function search(words) {
        if (!words.trim()) return;
        showPanel("Messages with “" + words + "”", "search", { text: words }, (ok) => { if (!ok.count) panelList.append(el("li", "muted", "nothing found")); });
      }
      function help() {
        $("paneltitle").textContent = "Commands"; panelList.textContent = ""; panel.hidden = false; panelRef = null;
        const rows = panelList;
        [["/me TEXT", "an action"], ["/join #room", "join a room and open it"], ["/part", "leave this room"],
         ["/msg WHO TEXT", "a direct message (WHO: nick, nick·fp or id)"], ["/nick NAME", "change your nick"],
         ["/private #room", "make a private room"], ["/invite WHO #room", "invite someone to your private room"],
         ["/accept #room, /decline #room", "answer an invite"], ["/search WORDS", "search what you can read"], ["/mentions", "messages that name you"],
         ["/who", "who has posted here"], ["/peers", "linked and known nodes"], ["//text", "post a line that starts with /"],
         ["Alt+↑ Alt+↓, Alt+1…9", "other conversations"], ["Ctrl+K", "search"], ["Esc", "close this, back to typing"]]
          .forEach(([k, v]) => { const li = el("li"); li.append(el("strong", "", k), el("div", "muted", v)); rows.append(li); });
      }
      function peerRow(e) {
        const li = el("li");
        li.append(label(e.nick, e.fp || "?", e));
        const bits = [e.addr, e.state + (e.view ? " (" + e.view + ")" : "")];
        if (e.rtt_us !== undefined) bits.push((e.rtt_us / 1000).toFixed(2) + " ms");
        if (e.state === "linked") bits.push(e.sending || e.receiving ? "sending " + e.sending + ", receiving " + e.receiving : "in sync");
        li.append(el("div", "muted", bits.join(" · ")));
        return li;
      }
      function foundRow(m) {
        const li = el("li"), b = el("button"); b.type = "button";
        b.append(el("span", "where", m.room || "direct"), el("span", "time", clock(m.ts)), label(m.nick, m.fp, m), el("span", "text", m.text));
        b.addEventListener("click", () => { openConv(keyOf(m)); closePanel(); input.focus(); });
        li.append(b); return li;
      }

      // --- sync state and invites -----------------------------------------
      function pollSync() { clearTimeout(syncTimer); send("sync"); send("peers", {}, null); syncTimer = setTimeout(pollSync, 5000); }
      let syncText = "", linkedCount = 0;
      function renderSync() {
        const s = $("sync");
        s.textContent = syncText + " · " + linkedCount + " linked";
        s.classList.toggle("behind", syncText.startsWith("catching"));
      }
      function renderInvite(e) {
        let li = [...$("invites").children].find((x) => x.dataset.room === e.room);
        if (li) return;
        li = el("li"); li.dataset.room = e.room;
        li.append(el("span", "", e.room + " from "), label(e.nick, e.by ? e.by.slice(0, 8) : "", e), el("br"));
        const yes = el("button", "", "Accept"), no = el("button", "", "Decline");
        yes.type = no.type = "button";
        yes.addEventListener("click", () => send("accept", { room: e.room }, () => { li.remove(); refreshInvites(); send("rooms"); }));
        no.addEventListener("click", () => send("decline", { room: e.room }, () => { li.remove(); refreshInvites(); }));
        li.append(yes, no); $("invites").append(li); refreshInvites();
      }
      function refreshInvites() { $("invitebox").hidden = $("invites").children.length === 0; }

      // --- events from the node -------------------------------------------
      function event(e) {
        const page = e.ref ? waiting.get(e.ref + ":page") : null;
        switch (e.type) {
          case "hello":
            me.id = e.id; me.fp = e.fp || ""; me.nick = e.nick || "";
            setText($("me"), (me.nick ? me.nick + "·" : "") + me.fp);
            uploadLost();
            waiting.clear(); pending.clear(); convs.clear(); $("invites").textContent = ""; refreshInvites();
            if (!open) open = e.room;
            // Opened at once (its history asked for first), so a live message
            // that comes meanwhile is kept below the page when it loads.
            openConv(open);
            send("rooms"); send("online");
            send("invites");
            pollSync();
            break;
          case "message": case "file":
            if (page) page.push(e); else { stoppedTyping(e); arrived(e); }
            break;
          case "file_progress": case "file_done": case "file_failed": case "file_waiting": fileState(e); break;  case "ready": if (e.cmd === "send_file") upload(); break;
          case "edit": case "delete": case "reaction": case "reply_quote": case "typing":
            changed(e); break;
          case "conversation": {
            const c = conv(e.room || "@" + e.with);
            c.unread = c.key === open ? 0 : e.unread; c.private = e.private === "yes";
            if (e.with) { c.nick = e.nick; c.fp = e.fp; c.marks = e; }
            if (e.last_id) { c.ts = Number(e.last_ts); c.last = { nick: e.last_nick, fp: e.last_fp, text: e.last_text, kind: e.last_kind }; }
            break;
          }
          case "found": if (e.ref === panelRef) panelList.append(foundRow(e)); break;  case "presence": case "online": presenceSeen(e); break;
          case "member":
            if (e.ref === panelRef) { const li = el("li"); li.append(label(e.nick, e.fp, e), el("div", "muted", presenceText(e))); panelList.append(li); }
            break;
          case "peers": linkedCount = e.linked; renderSync(); break;
          case "peer": if (e.ref === panelRef) panelList.append(peerRow(e)); break;
          case "peer_up": linked.add(e.id); send("peers", {}, null); break;
          case "peer_down": linked.delete(e.id); send("peers", {}, null); break;
          case "sync":
            syncText = e.complete === "yes" ? "in sync" : "catching up: " + e.missing + " missing from " + e.authors + (e.authors === 1 ? " author" : " authors");
            renderSync(); break;
          case "receipt": { const s = mine.get(e.id); if (s) setStatus(s, e.state); break; }
          case "invite": renderInvite(e); break;
          case "invite_accepted": case "invite_declined":
            [...$("invites").children].filter((x) => x.dataset.room === e.room).forEach((x) => x.remove()); refreshInvites();
            if (e.type === "invite_accepted") { if (e.ref) send("rooms", {}, () => openConv(e.room)); else send("rooms"); }  // accepted here: opened
            break;
          case "ok": {
            const then = waiting.get(e.ref); waiting.delete(e.ref); waiting.delete(e.ref + ":page");
            if (e.cmd === "rooms") renderConvs();
            if ((e.cmd === "post" || e.cmd === "msg") && pending.has(e.ref)) {
              const li = pending.get(e.ref); pending.delete(e.ref);
              const existing = shown(e.id);
              if (existing && existing !== li) { li.remove(); }
              else { li.dataset.id = e.id; const s = li.querySelector(".status"); setStatus(s, "stored"); mine.set(e.id, s); }
            }
            if (then) then(e);
            break;
          }
          case "error": {
            const then = waiting.get(e.ref); waiting.delete(e.ref); waiting.delete(e.ref + ":page");
            if (e.ref && pending.has(e.ref)) { const li = pending.get(e.ref); pending.delete(e.ref); const s = li.querySelector(".status"); s.dataset.state = "failed"; setText(s, "not sent: " + e.error); }
            else say(e.error);
            if (then && e.ref && e.ref.startsWith("hi")) then(null);
            uploadRefused(e);
            break;
          }
        }
      }

      // --- typing -----------------------------------------------------------
      function postText(text, kind) {
        const c = convs.get(open); if (!c) return;
        const li = line({ nick: me.nick, fp: me.fp, author: "", own: true, text: text, kind: kind, ts: Date.now() });
        const s = el("span", "status", "sending"); s.dataset.state = "sending"; li.append(s);
        list.append(li); toBottom();
        const ref = c.room ? send("post", { room: c.room, text: text, kind: kind }) : send("msg", { to: c.with, text: text, kind: kind });
        if (ref) pending.set(ref, li); else li.remove();
      }
      function joinRoom(name, then) {
        send("join", { room: name }, (ok) => { if (ok.warning) say("⚠ " + ok.warning); conv(ok.room); openConv(ok.room); send("rooms"); if (then) then(); });
      }
      function command(text) {
        const space = text.indexOf(" ");
        const name = (space < 0 ? text : text.slice(0, space)).slice(1), arg = space < 0 ? "" : text.slice(space + 1).trim();
        const c = convs.get(open);
        switch (name) {
          case "me": if (arg) postText(arg, "action"); else say("/me needs some text"); return;
          case "join": case "j": if (arg) joinRoom(arg); else say("/join needs a room: /join #random"); return;
          case "part": case "leave": leave(); return;
          case "msg": case "m": {
            const parts = arg.match(/^(\S+)\s+(.+)$/);
            if (!parts) { say("/msg needs someone and text: /msg bob hello"); return; }
            send("msg", { to: parts[1], text: parts[2] }, (ok) => openDirect(ok.id));
            return;
          }
          case "nick": send("nick", { nick: arg }, (ok) => { me.nick = arg; setText($("me"), arg + "·" + me.fp); }); return;
          case "private": send("private", { room: arg }, (ok) => { conv(ok.room).private = true; openConv(ok.room); say("private room made: /invite WHO " + ok.room + " lets someone in"); }); return;
          case "invite": { const p = arg.split(/\s+/); if (p.length !== 2) { say("/invite needs someone and a room: /invite bob #team"); return; } send("invite", { who: p[0], room: p[1] }, () => say("invited " + p[0] + " to " + p[1])); return; }
          case "accept": case "decline": send(name, { room: arg }, () => { send("invites"); send("rooms"); }); return;
          case "search": search(arg); return;
          case "mentions":
            showPanel("Messages that name you", "mentions", {}, (ok) => { if (!ok.count) panelList.append(el("li", "muted", "nothing names you yet")); });
            return;
          case "who": who(); return;  case "away": send("away", { reason: arg }, () => say("you are away" + (arg ? ": " + arg : ""))); return;  case "back": send("back", {}, () => say("you are back")); return;
          case "peers": peers(); return;
          case "help": help(); return;
          default: say("no command /" + name + " here (/help lists them; //text posts a line starting with /)");
        }
      }
      // The conversation of a direct message we just sent: its event named the other party.
      const directOf = new Map();
      function openDirect(id) { const key = directOf.get(id); if (key) openConv(key); }
      function leave() {
        const c = convs.get(open);
        if (!c || !c.room) { say("only a room can be left"); return; }
        send("part", { room: c.room }, () => { convs.delete(c.key); open = "#general"; openConv(open); });
      }
      $("composer").addEventListener("submit", (ev) => {
        ev.preventDefault();
        const text = input.value;
        if (!text.trim()) return;
        if (composing(text)) { /* an edit or a reply, sent */ }
        else if (text.startsWith("/") && !text.startsWith("//")) command(text.trim());
        else postText(text.startsWith("//") ? text.slice(1) : text, "text");
        input.value = "";
      });
      $("joinform").addEventListener("submit", (ev) => { ev.preventDefault(); const v = $("join").value.trim(); if (v) joinRoom(v.startsWith("#") ? v : "#" + v, () => { $("join").value = ""; closeSide(); input.focus(); }); });
      $("searchform").addEventListener("submit", (ev) => { ev.preventDefault(); search($("search").value); });
      $("whobtn").addEventListener("click", who);
      $("peersbtn").addEventListener("click", peers);
      $("leavebtn").addEventListener("click", leave);
      function closeSide() { $("side").classList.remove("shown"); $("menu").setAttribute("aria-expanded", "false"); }
      $("menu").addEventListener("click", () => {
        const shown = $("side").classList.toggle("shown");
        $("menu").setAttribute("aria-expanded", String(shown));
        if (shown) { const b = convList.querySelector('li[aria-current="true"] button') || convList.querySelector("button"); if (b) b.focus(); }
      });
      document.addEventListener("keydown", (ev) => {
        if (ev.altKey && (ev.key === "ArrowUp" || ev.key === "ArrowDown")) {
          const keys = sortedKeys(), i = keys.indexOf(open);
          const next = keys[(i + (ev.key === "ArrowDown" ? 1 : keys.length - 1)) % keys.length];
          if (next) openConv(next);
          ev.preventDefault();
        } else if (ev.altKey && /^[1-9]$/.test(ev.key)) {
          const next = sortedKeys()[Number(ev.key) - 1]; if (next) openConv(next); ev.preventDefault();
        } else if (ev.ctrlKey && ev.key.toLowerCase() === "k") {
          $("search").focus(); ev.preventDefault();
        } else if (ev.key === "Escape") {
          closePanel(); closeSide(); input.focus();
        }
      });
      document.addEventListener("visibilitychange", () => { if (reading()) markRead(); });
      /*MESSAGE-LIFE*/
      /*FILES*/
      function connect() {
        socket = new WebSocket("ws://" + location.host + "/api/v1?token=" + encodeURIComponent(token));
        socket.onopen = function () { backoff = 500; banner.hidden = true; };
        socket.onmessage = function (m) {
          let e; try { e = JSON.parse(m.data); } catch (err) { return; /* one bad line is skipped */ }
          if (e.type === "message" && e.kind === "dm" && e.author === me.id) directOf.set(e.id, keyOf(e));
          event(e);
        };
        socket.onclose = function (c) {
          clearTimeout(syncTimer);
          banner.dataset.code = String(c.code);  // why it closed (1001: the node stopped), for a test or a curious reader
          banner.textContent = c.code === 1008 || c.code === 1006 && !token ? "The node refused this page: open the address `peernode web-url` prints." : "The node is away; trying again…";
          if (c.code === 1006 && token) fetch("/api/v1/token?token=" + encodeURIComponent(token)).then((r) => { if (r.status === 401) banner.textContent = "Wrong token: this address is not the one the node printed. Open the address `peernode web-url` prints."; }, () => {});
          banner.hidden = false;
          setTimeout(connect, backoff); backoff = Math.min(backoff * 2, 10000);
        };
      }
      connect();
    })();
    """#
}
