/// The page's part for files (issue 39): an offer shows its name, size
/// and caption with a Get button (and a Cancel button while it is fetched,
/// which stops the fetch and erases what came); once this node holds the file, a
/// download link and, for a picture, the picture itself; the File… button,
/// a drop on the page or a paste sends a file from here, its bytes over the
/// API's socket after `send_file`, one file after another. Inside the main script's closure; text from the network
/// goes in with `textContent` only, and a picture only by its URL on this node.
extension WebPage {
    static let filesScript = #"""
      // --- files: offers, pictures, a file sent from here -----------------
      const PICTURES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
      const PIECE = 60000;
      // Bytes the browser may hold unsent on the socket before the next piece is read.
      const UNSENT = 4 << 20;
      let uploading = null;
      function fileURL(root) { return "/file/" + root + "?token=" + encodeURIComponent(token); }
      function bytes(n) {
        n = Number(n); const u = ["B", "kB", "MB", "GB"]; let i = 0;
        while (n >= 1000 && i < u.length - 1) { n /= 1000; i++; }
        return (i === 0 ? n : n < 10 ? n.toFixed(1) : Math.round(n)) + " " + u[i];
      }
      function fileBox(li, m) {
        li.classList.add("offer");
        li.fileRoot = m.root; li.fileType = m.media || ""; li.fileName = m.name;
        const box = el("span", "file");
        box.append(el("span", "tag", "file"), el("span", "fname", m.name), el("span", "muted", " (" + bytes(m.size) + ")"));
        if (m.caption) box.append(el("span", "caption", " " + m.caption));
        const get = el("button", "get", "Get"); get.type = "button"; get.title = "fetch it to your download folder";
        get.addEventListener("click", () => { get.disabled = true; setText(get, "Getting…"); cancelButton(li); send("get", { id: li.dataset.id }); });
        box.append(get);
        return box;
      }
      // An offer whose file this node holds already (our own, or fetched before the page
      // loaded): its download link and picture go in once its box is in the line.
      function fileLine(li, m) {
        li.append(fileBox(li, m));
        if (m.held === "yes") held(li);
      }
      // While a fetch runs: Cancel stops it, and what came of it is erased.
      function cancelButton(li) {
        const box = li.querySelector(".file"); if (!box || box.querySelector("button.cancel")) return;
        const c = el("button", "cancel", "Cancel"); c.type = "button"; c.title = "stop fetching it; what came is erased";
        c.addEventListener("click", () => { c.disabled = true; send("cancel", { id: li.dataset.id }); });
        box.append(c);
      }
      function noCancel(li) { const c = li.querySelector("button.cancel"); if (c) c.remove(); }
      function held(li) {
        noCancel(li);
        if (li.querySelector(".download")) return;
        const get = li.querySelector("button.get"); if (get) get.remove();
        const a = el("a", "download", "Download"); a.href = fileURL(li.fileRoot); a.setAttribute("download", "");
        li.append(a);
        if (PICTURES.includes(li.fileType)) {
          const img = el("img", "picture"); img.src = fileURL(li.fileRoot); img.alt = inert(li.fileName);
          li.append(img);
        }
      }
      function fileState(e) {
        for (const li of list.querySelectorAll("li.offer")) {
          if (li.fileRoot !== e.root) continue;
          if (e.type === "file_done") held(li);
          else if (e.type === "file_waiting") { const g = li.querySelector("button.get"); if (g) setText(g, "Waiting for someone who has it…"); }
          else if (e.type === "file_failed") {
            noCancel(li);
            const g = li.querySelector("button.get"); if (g) { g.disabled = false; setText(g, "Get"); }
            say(e.reason === "cancelled" ? "stopped: what had come of " + li.fileName + " is erased" : "the file was not fetched: " + e.reason);
          }
          else { const g = li.querySelector("button.get"); if (g && e.of) { g.disabled = true; setText(g, Math.floor(100 * Number(e.bytes) / Number(e.of)) + "%"); cancelButton(li); } }
        }
      }
      function chooseFile() { $("file").value = ""; $("file").click(); }
      // Files wait their turn (one goes at a time on the socket), each to
      // the conversation that was open when it was chosen, dropped or pasted.
      const queued = [];
      let uploadRef = null;
      function sendFile(file, to) {
        const c = convs.get(open); to = to || (c && target(c)); if (!to || !file) return;
        // The same file chosen again while it waits or goes (a second change event for one choice) is sent once.
        if (file === uploading || queued.some((q) => q.file === file)) return;
        if (uploading) { queued.push({ file: file, to: to }); say(file.name + " waits: " + queued.length + " after " + uploading.name); return; }
        uploading = file;
        // A folder dropped or chosen comes as a file that cannot be read: found before the node is asked to take it.
        file.slice(0, 1).arrayBuffer().then(() => true, () => false).then((readable) => {
          if (uploading !== file) return;
          if (!readable) { say(file.name + " cannot be read: a folder is not sent (send the files in it, or an archive of it)"); uploadEnded(); return; }
          say("sending " + file.name + "…");
          uploadRef = send("send_file", Object.assign({ name: file.name, size: String(file.size), caption: "" }, to), (ok) => { if (ok) notice.hidden = true; uploadEnded(); });
          if (!uploadRef) uploadEnded();
        });
      }
      // The node took the file, refused it (its error is said), or went away: the next goes.
      function uploadEnded() {
        uploading = null; uploadRef = null;
        const next = queued.shift(); if (next) sendFile(next.file, next.to);
      }
      function uploadRefused(e) { if (uploadRef && e.ref === uploadRef) uploadEnded(); }
      // The file going and those waiting are dropped, said in `words`.
      function uploadsDropped(words) { say(words); queued.length = 0; uploading = null; uploadRef = null; }
      function uploadLost() { if (uploading) uploadsDropped("the node went away while sending " + uploading.name + ": not sent"); }
      // A screenshot pasted comes as "image.png": named by when it was pasted, so two differ.
      function pastedName(file) {
        const d = new Date(), two = (n) => String(n).padStart(2, "0");
        const ext = (file.type.split("/")[1] || "bin").replace(/[^a-z0-9]/g, "").slice(0, 8) || "bin";
        return "pasted " + d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + "." + two(d.getMinutes()) + "." + two(d.getSeconds()) + "." + ext;
      }
      // A file pasted (a screenshot, a file copied in a file manager) is sent, unless the
      // clipboard also holds text: then it is a text paste, as from a word processor.
      document.addEventListener("paste", (ev) => {
        const data = ev.clipboardData; if (!data || !data.files.length || data.types.includes("text/plain")) return;
        // Into another box than the message's (search, a room to join): that box's, not a file to send.
        const into = ev.target; if (into && into !== input && (into.tagName === "INPUT" || into.tagName === "TEXTAREA")) return;
        ev.preventDefault();
        for (const f of data.files) sendFile(f.name === "image.png" || !f.name ? new File([f], pastedName(f), { type: f.type }) : f);
      });
      // Files dragged over the page: it says where they will go; dropped, they are sent.
      // A drop anywhere on the page is taken, so the browser never leaves the chat to show the file.
      let dragTimer = 0;
      function carriesFiles(ev) { return ev.dataTransfer && [...ev.dataTransfer.types].includes("Files"); }
      function dropping(on) {
        const c = convs.get(open);
        if (on && c) setText($("droptarget"), "Drop to send to " + (c.room || c.nick || "this conversation"));
        $("droptarget").hidden = !(on && c);
      }
      window.addEventListener("dragover", (ev) => {
        if (!carriesFiles(ev)) return;
        ev.preventDefault(); ev.dataTransfer.dropEffect = "copy";
        dropping(true); clearTimeout(dragTimer); dragTimer = setTimeout(() => dropping(false), 300);
      });
      window.addEventListener("drop", (ev) => {
        if (!carriesFiles(ev)) return;
        ev.preventDefault(); clearTimeout(dragTimer); dropping(false);
        if (!convs.get(open)) { say("open a room or a conversation to send files to"); return; }
        for (const f of ev.dataTransfer.files) sendFile(f);
      });
      async function upload() {
        const file = uploading; if (!file) return;
        let told = -1;
        for (let at = 0; at < file.size; at += PIECE) {
          // Sent as the socket drains: a large file is never read into memory whole.
          while (socket && socket.readyState === 1 && socket.bufferedAmount > UNSENT) await new Promise((r) => setTimeout(r, 20));
          let piece;
          try { piece = await file.slice(at, at + PIECE).arrayBuffer(); } catch (e) {
            // Gone or changed on the disk while it went: the node drops a file cut short when the connection closes.
            uploadsDropped(file.name + " could not be read to its end: not sent");
            if (socket) socket.close();
            return;
          }
          if (!socket || socket.readyState !== 1) { uploadLost(); return; }
          socket.send(piece);
          const percent = Math.floor(100 * (at + piece.byteLength) / file.size);
          if (file.size > UNSENT && percent >= told + 5) { told = percent; say("sending " + file.name + "… " + percent + "%"); }
        }
      }
      $("attach").addEventListener("click", chooseFile);
      // Several chosen at once go one after another, as a drop of several does.
      $("file").addEventListener("change", () => { for (const f of $("file").files) sendFile(f); });
    """#
}
