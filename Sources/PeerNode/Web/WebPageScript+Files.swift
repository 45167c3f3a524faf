/// The page's part for files (issue 39): an offer shows its name, size
/// and caption with a Get button (and a Cancel button while it is fetched,
/// which stops the fetch and erases what came); once this node holds the file, a
/// download link and, for a picture, the picture itself; the File… button
/// sends a file chosen here, its bytes over the API's socket after
/// `send_file`. Inside the main script's closure; text from the network
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
        if (m.held === "yes") held(li);
        return box;
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
      function sendFile(file) {
        const c = convs.get(open); if (!c || !file) return;
        if (uploading) { say("a file is being sent already"); return; }
        uploading = file;
        say("sending " + file.name + "…");
        send("send_file", Object.assign({ name: file.name, size: String(file.size), caption: "" }, target(c)), (ok) => { uploading = null; if (ok) notice.hidden = true; });
      }
      async function upload() {
        const file = uploading; if (!file) return;
        let told = -1;
        for (let at = 0; at < file.size; at += PIECE) {
          // Sent as the socket drains: a large file is never read into memory whole.
          while (socket && socket.readyState === 1 && socket.bufferedAmount > UNSENT) await new Promise((r) => setTimeout(r, 20));
          const piece = await file.slice(at, at + PIECE).arrayBuffer();
          if (!socket || socket.readyState !== 1) { uploading = null; say("the node went away while sending"); return; }
          socket.send(piece);
          const percent = Math.floor(100 * (at + piece.byteLength) / file.size);
          if (file.size > UNSENT && percent >= told + 5) { told = percent; say("sending " + file.name + "… " + percent + "%"); }
        }
      }
      $("attach").addEventListener("click", chooseFile);
      $("file").addEventListener("change", () => sendFile($("file").files[0]));
    """#
}
