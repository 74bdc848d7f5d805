extension WelcomePage {
    /// The page at `/invite` and `/join/join`. It holds nothing about any invite: the script fills
    /// it in from the fragment, in the browser.
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <meta name="robots" content="noindex">
        <title>An invite to Eleven</title>
        <link rel="stylesheet" href="/invite/welcome.css">
        <script src="/invite/welcome.js" defer></script>
        </head>
        <body>
        <main id="card" data-state="loading">
        <p class="brand">Eleven</p>
        <img id="picture" alt="" hidden>
        <h1 id="title">An invite to Eleven</h1>
        <p id="inviter" hidden></p>
        <p id="suggested" hidden></p>
        <p id="state" role="status" hidden></p>
        <section id="code-box" hidden>
        <p>Your code. Read it aloud or type it exactly:</p>
        <p id="code" class="code"></p>
        </section>
        <noscript>
        <p id="noscript">This is an invite to a space on Eleven, an end-to-end encrypted messenger.
        The invite is the part of the address after &ldquo;#&rdquo;: your browser never sends it to any server,
        and this page reads it only with its script, which is off. To accept the invite, open the
        whole link with the Eleven app, or on a computer run
        <code>eleven join '&lt;the whole link from the address bar&gt;'</code>. Opening this page used nothing.</p>
        </noscript>
        <section id="actions" hidden>
        <p><a id="open" class="button" href="#">Open in Eleven</a></p>
        <p>Or, on a computer with the <code>eleven</code> command, paste:</p>
        <pre id="command"></pre>
        <p><button id="copy" type="button">Copy the command</button> <span id="copied" role="status"></span></p>
        </section>
        <section id="install">
        <h2>Don't have Eleven yet?</h2>
        <p>Install the Eleven app from your phone's app store, or the <code>eleven</code> command-line
        client on a computer (see the README of Eleven's source), then come back to this link.
        Looking at this page does not use the invite: it stays valid until you join.</p>
        </section>
        </main>
        </body>
        </html>

        """#
}
