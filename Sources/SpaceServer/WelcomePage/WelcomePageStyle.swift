extension WelcomePage {
    /// The page's stylesheet: system fonts, phone width first, readable without colour (every
    /// state is in words; the button has a border and underline, not just a colour).
    static let css = #"""
        :root { color-scheme: light dark; font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
        body { margin: 0; padding: 1rem; line-height: 1.45; background: Canvas; color: CanvasText; }
        main { max-width: 32rem; margin: 0 auto; padding: 1.25rem; border: 2px solid GrayText;
          border-radius: 0.75rem; }
        .brand { margin: 0 0 0.5rem; font-weight: 700; letter-spacing: 0.05em; text-transform: uppercase; }
        h1 { font-size: 1.6rem; margin: 0.25rem 0 0.5rem; overflow-wrap: anywhere; }
        h2 { font-size: 1.1rem; margin-top: 1.5rem; }
        #picture { width: 4rem; height: 4rem; object-fit: cover; border-radius: 0.5rem; border: 1px solid GrayText; }
        #state { font-weight: 700; border-left: 0.35rem solid GrayText; padding-left: 0.6rem; }
        main[data-state="ready"] #state::before { content: "\2713  "; }
        main[data-state="used"] #state::before, main[data-state="expired"] #state::before,
        main[data-state="cancelled"] #state::before, main[data-state="not-found"] #state::before,
        main[data-state="invalid"] #state::before { content: "\2715  "; }
        .code { font-size: 2.2rem; font-weight: 700; font-family: ui-monospace, monospace;
          letter-spacing: 0.04em; overflow-wrap: anywhere; margin: 0.25rem 0; }
        pre { white-space: pre-wrap; word-break: break-all; padding: 0.6rem; border: 1px dashed GrayText;
          border-radius: 0.4rem; font-size: 0.85rem; }
        .button, button { display: inline-block; padding: 0.6rem 1rem; border: 2px solid CanvasText;
          border-radius: 0.5rem; font: inherit; font-weight: 700; color: CanvasText; background: Canvas;
          text-decoration: underline; cursor: pointer; }
        [hidden] { display: none !important; }
        @media (max-width: 420px) { body { padding: 0.5rem; } main { padding: 0.9rem; } .code { font-size: 1.8rem; } }

        """#
}
