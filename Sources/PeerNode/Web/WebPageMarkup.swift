/// The page's HTML and CSS (docs/API.md, "The page"). No inline script or
/// style: the policy forbids both. Light and dark follow the system; below
/// 700 px wide the conversation list folds away behind a button.
extension WebPage {
    static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <meta name="color-scheme" content="light dark">
    <title>peernode</title>
    <link rel="stylesheet" href="/app.css">
    <script src="/app.js" defer></script>
    </head>
    <body>
    <div id="banner" role="status" hidden></div>
    <div id="app">
      <nav id="side" aria-label="Conversations">
        <div class="who-am-i"><span id="me"></span></div>
        <div id="sync" role="status" title="Whether this node holds everything its peers have (refreshed every few seconds)"></div>
        <form id="joinform" autocomplete="off">
          <label for="join" class="hidden">Join a room</label>
          <input id="join" placeholder="#room to join" maxlength="64">
          <button type="submit" title="Join the room">Join</button>
        </form>
        <ul id="convs" aria-label="Rooms and direct messages"></ul>
        <section id="invitebox" hidden>
          <h2>Invites</h2>
          <ul id="invites"></ul>
        </section>
        <p class="keys">Alt+↑/↓ or Alt+1…9: conversations · Ctrl+K: search · Esc: back to typing · /help</p>
      </nav>
      <section id="chat">
        <header id="top">
          <button id="menu" type="button" aria-label="Conversations" aria-controls="side" aria-expanded="false">☰</button>
          <h1 id="room">peernode</h1>
          <form id="searchform" role="search" autocomplete="off">
            <label for="search" class="hidden">Search messages</label>
            <input id="search" type="search" placeholder="Search" maxlength="200">
          </form>
          <button id="whobtn" type="button" title="Who has posted here, and who is linked">People</button>
          <button id="peersbtn" type="button" title="Linked and known nodes">Peers</button>
          <button id="leavebtn" type="button" title="Leave this room">Leave</button>
        </header>
        <div id="notice" role="alert" hidden></div>
        <div id="droptarget" hidden></div>
        <main id="scroller">
          <div id="older" hidden>Loading older messages…</div>
          <div id="start" hidden>The beginning of this conversation</div>
          <ol id="messages" aria-live="polite"></ol>
        </main>
        <aside id="panel" hidden aria-labelledby="paneltitle">
          <div class="panelhead"><h2 id="paneltitle"></h2><button id="panelclose" type="button" aria-label="Close">×</button></div>
          <ol id="panellist"></ol>
        </aside>
        <div id="typing" aria-live="polite"></div>
        <div id="replying" hidden><span id="replyingtext"></span> <button id="replyingcancel" type="button" aria-label="Cancel">×</button></div>
        <form id="composer" autocomplete="off">
          <label for="text" class="hidden">Message</label>
          <input id="text" maxlength="32768" placeholder="Type a message, Enter sends; /me does an action, /help lists commands" autofocus>
          <button id="attach" type="button" title="send a file to this conversation">File…</button>
          <input id="file" type="file" multiple hidden>
          <button type="submit">Send</button>
        </form>
      </section>
    </div>
    </body>
    </html>
    """#

    static let style = #"""
    :root { color-scheme: light dark; --bg: #fff; --side: #f3f4f6; --fg: #1b1b1b; --muted: #666; --line: #ddd; --accent: #2456c8; --warn: #a35b00; --badge: #2456c8; --badgefg: #fff; --sel: #dde6fb; }
    @media (prefers-color-scheme: dark) { :root { --bg: #16181c; --side: #1e2126; --fg: #e8e8e8; --muted: #9a9a9a; --line: #30343a; --accent: #8fb0ff; --warn: #ffb454; --badge: #8fb0ff; --badgefg: #111; --sel: #2a3447; } }
    * { box-sizing: border-box; }
    body { margin: 0; font: 15px/1.4 system-ui, sans-serif; background: var(--bg); color: var(--fg); height: 100vh; display: flex; flex-direction: column; }
    #app { flex: 1; display: flex; min-height: 0; }
    #side { width: 17em; flex: none; background: var(--side); border-right: 1px solid var(--line); display: flex; flex-direction: column; overflow-y: auto; }
    .who-am-i { padding: .6em .8em .2em; font-weight: 600; overflow-wrap: anywhere; }
    #sync { padding: 0 .8em .4em; color: var(--muted); font-size: .85em; }
    #sync.behind { color: var(--warn); }
    #joinform { display: flex; gap: .3em; padding: .3em .8em; }
    #joinform input { min-width: 0; }
    #convs { list-style: none; margin: 0; padding: .2em 0; flex: 1; }
    #convs button { all: unset; display: block; width: 100%; padding: .35em .8em; cursor: pointer; box-sizing: border-box; }
    #convs button:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
    #convs li[aria-current="true"] button { background: var(--sel); }
    .convname { display: flex; justify-content: space-between; gap: .5em; font-weight: 600; overflow-wrap: anywhere; }
    .badge { background: var(--badge); color: var(--badgefg); border-radius: 1em; padding: 0 .5em; font-size: .8em; font-weight: 600; align-self: center; }
    .preview { color: var(--muted); font-size: .85em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
    .lock { color: var(--muted); font-weight: 400; }
    #invitebox { padding: .3em .8em; border-top: 1px solid var(--line); }
    #invitebox h2, .panelhead h2 { font-size: .95em; margin: .3em 0; }
    #invites { list-style: none; margin: 0; padding: 0; }
    #invites li { padding: .2em 0; overflow-wrap: anywhere; }
    #invites button { margin: .2em .3em 0 0; }
    .keys { color: var(--muted); font-size: .75em; padding: .4em .8em; margin: 0; }
    #chat { flex: 1; display: flex; flex-direction: column; min-width: 0; position: relative; }
    header#top { display: flex; align-items: center; gap: .5em; padding: .4em .8em; border-bottom: 1px solid var(--line); }
    h1 { font-size: 1.1em; margin: 0; flex: 1; overflow-wrap: anywhere; }
    #menu { display: none; }
    #searchform input { width: 10em; }
    #scroller { flex: 1; overflow-y: auto; padding: .5em 1em; }
    #older, #start { color: var(--muted); font-size: .85em; text-align: center; padding: .3em; }
    /* Over the list, not in it: showing it must not move what the reader is reading. */
    #older { position: absolute; left: 0; right: 0; top: 3em; z-index: 1; pointer-events: none; }
    #messages { list-style: none; margin: 0; padding: 0; }
    #messages li { padding: .15em 0; overflow-wrap: anywhere; }
    /* Each piece of network text is its own bidi island: right-to-left text in a nick or a body cannot reorder what is beside it. */
    .nick, .fp, .text, .preview, .convname span, #me, #room { unicode-bidi: isolate; }
    .nick { font-weight: 600; margin-right: .4em; }
    .fp { color: var(--muted); font-weight: 400; }
    .action .text { font-style: italic; }
    #messages li.mention { background: var(--sel); border-left: 3px solid var(--accent); padding-left: .4em; }
    .status { color: var(--muted); font-size: .8em; margin-left: .5em; }
    .status[data-state="read"] { color: var(--accent); }
    .time { color: var(--muted); font-size: .8em; margin-right: .5em; }
    .quote, .edited, .reactions { color: var(--muted); font-size: .85em; unicode-bidi: isolate; }
    .quote { border-left: 2px solid var(--line); padding-left: .3em; margin-right: .4em; }
    .edited, .reactions { margin-left: .4em; }
    .reactions:empty, .acts { display: none; }
    #messages li:hover .acts, #messages li:focus-within .acts { display: inline; }
    .acts button { padding: 0 .3em; margin-left: .2em; font-size: .8em; }
    .file .fname { font-weight: 600; } .file .caption { margin-left: .2em; }
    .file .tag { font-size: .75em; text-transform: uppercase; letter-spacing: .05em; border: 1px solid var(--line); border-radius: 3px; padding: 0 .3em; margin-right: .4em; color: var(--muted); }
    .file button.get, .file button.cancel, a.download { margin-left: .5em; font-size: .85em; }
    img.picture { display: block; max-width: min(320px, 80%); max-height: 320px; margin: .3em 0 .2em 4.5em; border-radius: 4px; border: 1px solid var(--line); }
    #messages li.deleted .text { color: var(--muted); font-style: italic; }
    #typing { color: var(--muted); font-size: .85em; padding: 0 1em; min-height: 1.2em; }
    #replying { padding: .2em 1em; background: var(--side); font-size: .85em; }
    .where { color: var(--muted); font-size: .8em; margin-right: .5em; }
    #banner { background: var(--warn); color: #000; padding: .4em 1em; }
    #droptarget { position: fixed; inset: 1em; z-index: 10; display: flex; align-items: center; justify-content: center; border: 3px dashed var(--accent); border-radius: 12px; background: color-mix(in srgb, var(--bg) 85%, transparent); color: var(--accent); font-size: 1.4em; font-weight: 600; pointer-events: none; }
    #droptarget[hidden] { display: none; }
    #notice { background: var(--side); border-bottom: 1px solid var(--line); padding: .3em 1em; color: var(--warn); }
    #panel { position: absolute; right: 0; top: 2.8em; bottom: 3.4em; width: min(24em, 100%); background: var(--bg); border-left: 1px solid var(--line); overflow-y: auto; padding: .3em .8em; box-shadow: -4px 0 12px rgba(0,0,0,.12); }
    .panelhead { display: flex; justify-content: space-between; align-items: center; }
    #panellist { list-style: none; margin: 0; padding: 0; }
    #panellist li { padding: .3em 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
    #panellist li button { all: unset; cursor: pointer; display: block; width: 100%; }
    #panellist li button:focus-visible { outline: 2px solid var(--accent); }
    .muted { color: var(--muted); font-size: .85em; }
    form#composer { display: flex; gap: .5em; padding: .5em 1em; border-top: 1px solid var(--line); }
    input { flex: 1; font: inherit; padding: .4em; color: var(--fg); background: var(--bg); border: 1px solid var(--line); border-radius: 4px; }
    button { font: inherit; padding: .35em .8em; }
    .hidden { position: absolute; left: -10000px; }
    @media (max-width: 700px) {
      #menu { display: inline-block; }
      #side { position: absolute; z-index: 2; top: 0; bottom: 0; left: 0; width: min(20em, 85vw); box-shadow: 4px 0 12px rgba(0,0,0,.25); }
      #side:not(.shown) { display: none; }
      #app { position: relative; }
      #searchform input { width: 6em; }
      #whobtn, #peersbtn, #leavebtn { padding: .35em .4em; }
    }
    """#
}
