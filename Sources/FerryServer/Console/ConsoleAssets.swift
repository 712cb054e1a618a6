/// The console's stylesheet and script, served by the server itself: no
/// build step, no CDN. Every page reads without the script; it only keeps
/// the overview's live panel current.
enum ConsoleAssets {
    static let css = """
        :root { color-scheme: light; --ink: #1a1a1a; --muted: #4a4a4a; --line: #c8c8c8; --accent: #0b57a4; --bad: #a4000b; --bg: #fff; --band: #f2f4f7; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: var(--bg); }
        a { color: var(--accent); }
        a:focus, button:focus, input:focus, select:focus { outline: 3px solid #f0a500; outline-offset: 2px; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; z-index: 2; }
        header { background: var(--band); border-bottom: 1px solid var(--line); padding: 8px 16px; display: flex; flex-wrap: wrap; align-items: center; gap: 8px 24px; }
        .brand { font-weight: 700; margin: 0; }
        nav { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; }
        nav ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
        nav a[aria-current="page"] { font-weight: 700; text-decoration-thickness: 3px; }
        main { padding: 16px; max-width: 1200px; }
        h1 { font-size: 1.6rem; margin: 0 0 12px; overflow-wrap: anywhere; }
        h2 { font-size: 1.2rem; margin: 24px 0 8px; }
        table { border-collapse: collapse; width: 100%; margin: 12px 0; display: block; overflow-x: auto; }
        caption { display: block; text-align: left; font-weight: 600; padding: 4px 0; }
        th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
        th { background: var(--band); }
        td.values { overflow-wrap: anywhere; min-width: 12em; }
        code { font-size: 0.9em; overflow-wrap: anywhere; }
        .facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 8px; margin: 0; }
        .facts div { background: var(--band); padding: 8px; border-radius: 4px; }
        .facts dt { color: var(--muted); font-size: 0.85rem; }
        .facts dd { margin: 0; font-weight: 600; overflow-wrap: anywhere; }
        .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 12px; }
        .chart { margin: 0; border: 1px solid var(--line); border-radius: 4px; padding: 8px; color: var(--accent); }
        .chart figcaption { color: var(--ink); font-size: 0.9rem; }
        form.stack { display: grid; gap: 6px; max-width: 420px; margin: 12px 0; }
        form.inline { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 0; }
        form.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; }
        form.filters .field { display: flex; gap: 6px; align-items: center; }
        form.filters .field input { width: 11em; }
        input, select, button { font: inherit; padding: 6px 8px; border: 1px solid #767676; border-radius: 4px; background: #fff; color: var(--ink); }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.danger { background: var(--bad); border-color: var(--bad); }
        .signout button { background: #fff; color: var(--accent); }
        .error { color: var(--bad); font-weight: 600; }
        .notice { background: #e7f1fb; border-left: 4px solid var(--accent); padding: 8px; }
        .hint { color: var(--muted); font-size: 0.9rem; }
        .list { padding-left: 20px; }
        .event-conflict td, .event-notice td { background: #fff4e5; }
        .event-rejection td, .event-deleted td { background: #fdecee; }
        .visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
        @media (max-width: 600px) { main { padding: 10px; } th, td { padding: 4px; } header { padding: 8px 10px; } }
        """

    /// Keeps the overview's live panel current from the server-sent events
    /// at `data-live`; the server renders each panel, so this only swaps it in.
    static let javascript = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          var panel = document.querySelector("[data-live]");
          if (!panel || !window.EventSource) { return; }
          var source = new EventSource(panel.getAttribute("data-live"));
          source.addEventListener("activity", function (event) { panel.innerHTML = event.data; });
          source.addEventListener("signedout", function () { source.close(); window.location.assign("/console/login"); });
        });
        """
}
