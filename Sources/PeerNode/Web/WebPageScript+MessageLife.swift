/// The page's part for the life of a message (issue 17): replies with
/// their quote, reactions as counts, edits in place, deletes, typing; the
/// buttons beside each message and the composer's reply and edit modes.
/// Inside the main script's closure (its helpers are in scope); text from
/// the network goes in with `textContent` only, as everywhere.
extension WebPage {
    static let messageLifeScript = #"""
      // --- the life of a message: replies, reactions, edits, deletes, typing ---
      let replyTo = null, editing = null, typingSent = 0;
      const typers = new Map();   // conversation key -> Map(author id -> { name, until })
      const TYPING_SHOWN = 7000, TYPING_EVERY = 3000;
      function quoteOf(m) {
        const text = m.reply_to_state === "here" ? "↪ " + (m.reply_to_text || "")
          : m.reply_to_state === "deleted" ? "↪ a deleted message" : "↪ a message not here yet";
        return el("span", "quote", text.length > 60 ? text.slice(0, 59) + "…" : text);
      }
      // Who is online network-wide (`online` rows on load, `presence` events after): marked on direct conversations.
      const presenceOf = new Map();   // account id -> "online" | "away" | "gone" | "relay"
      function presenceSeen(e) { presenceOf.set(e.id, e.type === "online" ? e.presence : e.state); renderConvs(); }
      function presenceMark(id) { const p = presenceOf.get(id); return p === "online" ? " · online" : p === "away" ? " · away" : ""; }
      // Who is online (`member` rows of /who): online, away with why, or when last seen (issue 44).
      function presenceText(m) {
        if (m.state === "you") return m.presence === "away" ? "you, away" + (m.reason ? ": " + m.reason : "") : "you";
        if (m.presence === "offline") return Number(m.last_seen) ? "offline, last seen " + new Date(Number(m.last_seen)).toLocaleString() : "not seen";
        return m.presence + (m.reason ? ": " + m.reason : "") + (m.state === "linked" ? ", linked" : "");
      }
      function reactionText(counts) { return [...counts].filter(([, n]) => n > 0).map(([r, n]) => r + " " + n).join("  "); }
      function decorate(li, m) {
        li.counts = new Map();
        const parts = (m.reactions || "").split(" ");
        for (let i = 0; i + 1 < parts.length; i += 2) li.counts.set(parts[i], Number(parts[i + 1]));
        if (m.edited) li.append(el("span", "edited", "(edited)"));
        li.append(el("span", "reactions", reactionText(li.counts)));
        // The buttons read the id when clicked: a message of ours being sent gets it from its ok.
        const acts = el("span", "acts");
        const act = (text, title, then) => { const b = el("button", "", text); b.type = "button"; b.title = title; b.addEventListener("click", then); acts.append(b); };
        act("↩", "reply", () => startReply(li, m));
        act("👍", "react 👍 (again: take it back)", () => send("react", { id: li.dataset.id, reaction: "👍" }));
        if (m.author === me.id || m.own) {
          act("✎", "edit", () => startEdit(li));
          act("🗑", "delete for everyone", () => send("delete", { id: li.dataset.id }));
        }
        li.append(acts);
      }
      function setMode(text) {
        $("replying").hidden = !text;
        setText($("replyingtext"), text || "");
        input.focus();
      }
      function startReply(li, m) {
        editing = null; replyTo = li.dataset.id;
        setMode("replying to " + (m.nick || m.fp || "") + ": " + (li.querySelector(".text") || {}).textContent);
      }
      function startEdit(li) {
        replyTo = null; editing = li.dataset.id;
        input.value = (li.querySelector(".text") || {}).textContent || "";
        setMode("editing your message (Esc or × to stop)");
      }
      function stopComposing() { replyTo = null; editing = null; setMode(""); }
      $("replyingcancel").addEventListener("click", () => { stopComposing(); input.value = ""; });
      input.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && (replyTo || editing)) stopComposing(); });
      // Sends the composer's text as a reply or an edit, when in that mode.
      function composing(text) {
        if (replyTo) send("reply", { id: replyTo, text: text });
        else if (editing) send("edit", { id: editing, text: text });
        else return false;
        stopComposing();
        return true;
      }
      // Typing: at most one notice every 3 s while a message is being written here.
      input.addEventListener("input", () => {
        const c = convs.get(open), v = input.value;
        if (!c || !v || v.startsWith("/") && !v.startsWith("/me ") || Date.now() - typingSent < TYPING_EVERY) return;
        typingSent = Date.now();
        send("typing", target(c), null);
      });
      function renderTyping() {
        const now = Date.now(), here = typers.get(open), names = [];
        if (here) for (const [id, t] of here) { if (t.until > now) names.push(t.name); else here.delete(id); }
        setText($("typing"), names.length === 0 ? "" : names.length > 3 ? "several people are typing…"
          : names.join(", ") + (names.length === 1 ? " is" : " are") + " typing…");
      }
      function stoppedTyping(m) {
        const here = typers.get(keyOf(m));
        if (here && here.delete(m.author)) renderTyping();
      }
      // An edit, delete, reaction, late quote or typing notice: the message it changes, changed.
      function changed(e) {
        if (e.type === "typing") {
          const key = e.room || "@" + e.id;
          if (!typers.has(key)) typers.set(key, new Map());
          typers.get(key).set(e.id, { name: (e.nick ? e.nick + "·" : "") + (e.fp || ""), until: Date.now() + TYPING_SHOWN });
          renderTyping(); setTimeout(renderTyping, TYPING_SHOWN + 100);
          return;
        }
        const li = shown(e.type === "edit" ? e.original : e.type === "reaction" ? e.target : e.id);
        if (!li) return;
        if (e.type === "edit") {
          setText(li.querySelector(".text"), e.text);
          if (!li.querySelector(".edited")) li.querySelector(".reactions").before(el("span", "edited", "(edited)"));
        } else if (e.type === "delete") {
          li.classList.add("deleted");
          li.querySelectorAll(".quote, .reactions, .edited, .acts").forEach((x) => x.remove());
          setText(li.querySelector(".text"), "deleted a message");
        } else if (e.type === "reaction") {
          li.counts.set(e.reaction, Number(e.count));
          setText(li.querySelector(".reactions"), reactionText(li.counts));
        } else if (e.type === "reply_quote") {
          const old = li.querySelector(".quote");
          if (old) old.replaceWith(quoteOf(e));
        }
      }
      setInterval(renderTyping, 1000);
    """#
}
