extension WelcomePage {
    /// The page's script. It reads the fragment (never sent to any server), parses every link form
    /// `InviteReference` parses, derives the invite id from `T` with HKDF-SHA256 exactly as
    /// `LinkSecret.derive()` does, and asks the server only `GET /api/key-invite/{id}`, which
    /// consumes nothing. Names are put in the page as text, never as markup.
    static let script = #"""
        "use strict";
        (function () {
          const B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
          const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
          const MAX_LINK = 2048, MAX_NAME_BYTES = 128;

          class LinkProblem extends Error {}
          function problem(text) { return new LinkProblem(text); }

          function base58(text) {
            if (text.length > 90) return null;
            let ones = 0;
            while (ones < text.length && text[ones] === "1") ones++;
            const bytes = [];
            for (let i = ones; i < text.length; i++) {
              let carry = B58.indexOf(text[i]);
              if (carry < 0) return null;
              for (let j = 0; j < bytes.length; j++) {
                carry += bytes[j] * 58;
                bytes[j] = carry & 255;
                carry >>= 8;
              }
              while (carry > 0) { bytes.push(carry & 255); carry >>= 8; }
            }
            return Uint8Array.from(new Array(ones).fill(0).concat(bytes.reverse()));
          }

          // Strict base64url without padding; unused trailing bits must be zero.
          function base64url(text) {
            if (text.length % 4 === 1) return null;
            const out = [];
            let acc = 0, bits = 0;
            for (const c of text) {
              const v = B64.indexOf(c);
              if (v < 0 || c.length !== 1) return null;
              acc = ((acc << 6) | v) & 0xffff;
              bits += 6;
              if (bits >= 8) { bits -= 8; out.push((acc >> bits) & 255); }
            }
            if (acc & ((1 << bits) - 1)) return null;
            return Uint8Array.from(out);
          }

          function base64urlEncode(bytes) {
            let out = "", acc = 0, bits = 0;
            for (const b of bytes) {
              acc = ((acc << 8) | b) & 0xffff;
              bits += 8;
              while (bits >= 6) { bits -= 6; out += B64[(acc >> bits) & 63]; }
            }
            if (bits > 0) out += B64[(acc << (6 - bits)) & 63];
            return out;
          }

          function decodeName(slot) {
            let name;
            try { name = decodeURIComponent(slot); } catch (e) {
              throw problem("The name in this link is not written correctly. Copy the link again.");
            }
            if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) throw problem("The name in this link contains control characters.");
            if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) throw problem("The name in this link is too long.");
            if (name.trim() === "") throw problem("The name in this link is blank.");
            return name;
          }

          function base58Bytes(text, count, noun) {
            const bytes = base58(text);
            if (bytes === null) throw problem("The " + noun + " in this link has a character that cannot be in it. Copy the link again.");
            if (bytes.length !== count) throw problem("The " + noun + " in this link has the wrong length: it may be cut off.");
            return bytes;
          }

          // Legacy links (e1. and raw) carry T in base64url; those this parser's base58 reads too.
          function legacySecret(text) {
            if (text.length === 22) {
              const bytes = base64url(text);
              if (bytes !== null && bytes.length === 16) return bytes;
            }
            return base58Bytes(text, 16, "secret");
          }

          const CODE = /^[0-9]+(-[A-Za-z]+)+$|^[A-Za-z]+(-[A-Za-z]+)*-[0-9]+$/;

          // Mirrors InviteReference(parsing:): current, e1., raw T, and the short-code form.
          function parse(fragment) {
            if (fragment.length === 0) throw problem("This link has nothing after \u201c#\u201d, which carries the invite. Copy the whole link.");
            if (fragment.length > MAX_LINK) throw problem("This link is too long to be an invite.");
            if (fragment.includes("/")) {
              const slots = fragment.split("/");
              if (slots.length > 3) throw problem("This link has too many parts after \u201c#\u201d.");
              if (slots.some(function (s) { return s === ""; })) throw problem("A part of this link is empty. Copy the whole link.");
              const name = decodeName(slots[0]);
              if (slots[1].includes("-")) {
                if (slots.length !== 2 || !CODE.test(slots[1])) throw problem("The code in this link cannot be read. Ask for the link again.");
                return { kind: "code", format: "current", name: name, code: slots[1].toLowerCase() };
              }
              const secret = base58Bytes(slots[1], 16, "secret");
              const branding = slots.length === 3 ? base58Bytes(slots[2], 32, "branding key") : null;
              return { kind: "link", format: "current", name: name, secret: secret, branding: branding };
            }
            if (fragment.startsWith("e1.")) {
              const slots = fragment.slice(3).split("~");
              if (slots.length > 3) throw problem("This link has too many parts.");
              if (slots.length < 2) throw problem("This link has no name part after the secret.");
              if (slots.some(function (s) { return s === ""; })) throw problem("A part of this link is empty. Copy the whole link.");
              const secret = legacySecret(slots[0]);
              const name = decodeName(slots[1]);
              const branding = slots.length === 3 ? base58Bytes(slots[2], 32, "branding key") : null;
              return { kind: "link", format: "legacy_e1", name: name, secret: secret, branding: branding };
            }
            return { kind: "link", format: "legacy_raw", name: null, secret: legacySecret(fragment), branding: null };
          }

          function utf8(text) { return new TextEncoder().encode(text); }

          // --- SHA-256, HMAC and HKDF for pages opened without WebCrypto (plain http to a remote host).
          const K = new Uint32Array([
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
            0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
            0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
            0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
            0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
            0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
            0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
          function sha256(data) {
            const h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
            const length = data.length, padded = new Uint8Array(((length + 9 + 63) >> 6) << 6);
            padded.set(data);
            padded[length] = 0x80;
            const view = new DataView(padded.buffer);
            view.setUint32(padded.length - 4, length * 8);
            view.setUint32(padded.length - 8, Math.floor(length / 0x20000000));
            const w = new Uint32Array(64);
            for (let offset = 0; offset < padded.length; offset += 64) {
              for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + 4 * i);
              for (let i = 16; i < 64; i++) {
                const a = w[i - 15], b = w[i - 2];
                const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
                const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
                w[i] = w[i - 16] + s0 + w[i - 7] + s1;
              }
              let [a, b, c, d, e, f, g, hh] = h;
              for (let i = 0; i < 64; i++) {
                const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
                const t1 = (hh + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) >>> 0;
                const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
                const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
                hh = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
              }
              h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
            }
            const out = new Uint8Array(32);
            const outView = new DataView(out.buffer);
            for (let i = 0; i < 8; i++) outView.setUint32(4 * i, h[i]);
            return out;
          }
          function concat(a, b) { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; }
          function hmac(key, data) {
            const block = new Uint8Array(64);
            block.set(key.length > 64 ? sha256(key) : key);
            const inner = block.map(function (x) { return x ^ 0x36; });
            const outer = block.map(function (x) { return x ^ 0x5c; });
            return sha256(concat(outer, sha256(concat(inner, data))));
          }
          function hkdfFallback(secret, salt, info, count) {
            const prk = hmac(salt, secret);
            let previous = new Uint8Array(0), out = new Uint8Array(0);
            for (let i = 1; out.length < count; i++) {
              previous = hmac(prk, concat(concat(previous, info), Uint8Array.of(i)));
              out = concat(out, previous);
            }
            return out.slice(0, count);
          }

          // --- XChaCha20-Poly1305 (IETF, as libsodium), to open a sealed space's name with the link's
          // branding key (SealedBranding in ClientCore); WebCrypto has no ChaCha.
          function rotl(v, n) { return (v << n) | (v >>> (32 - n)); }
          function rounds(x) {
            function q(a, b, c, d) {
              x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 16);
              x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 12);
              x[a] += x[b]; x[d] = rotl(x[d] ^ x[a], 8);
              x[c] += x[d]; x[b] = rotl(x[b] ^ x[c], 7);
            }
            for (let i = 0; i < 10; i++) {
              q(0, 4, 8, 12); q(1, 5, 9, 13); q(2, 6, 10, 14); q(3, 7, 11, 15);
              q(0, 5, 10, 15); q(1, 6, 11, 12); q(2, 7, 8, 13); q(3, 4, 9, 14);
            }
          }
          function words(bytes) { const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength); return Array.from({ length: bytes.length / 4 }, function (_, i) { return view.getUint32(4 * i, true); }); }
          const SIGMA = [0x61707865, 0x3320646e, 0x79622d32, 0x6b206574];
          function hchacha(key, nonce16) {
            const x = new Uint32Array(SIGMA.concat(words(key), words(nonce16)));
            rounds(x);
            const out = new Uint8Array(32), view = new DataView(out.buffer);
            [0, 1, 2, 3, 12, 13, 14, 15].forEach(function (w, i) { view.setUint32(4 * i, x[w], true); });
            return out;
          }
          function chachaStream(key, nonce12, counter, length) {
            const out = new Uint8Array(length), view = new DataView(out.buffer);
            const base = SIGMA.concat(words(key), [0], words(nonce12));
            for (let block = 0; block * 64 < length; block++) {
              const input = new Uint32Array(base);
              input[12] = counter + block;
              const x = new Uint32Array(input);
              rounds(x);
              for (let i = 0; i < 16 && block * 64 + 4 * i < length; i++) {
                const word = (x[i] + input[i]) >>> 0;
                for (let b = 0; b < 4 && block * 64 + 4 * i + b < length; b++) out[block * 64 + 4 * i + b] = (word >>> (8 * b)) & 255;
              }
            }
            return out;
          }
          function poly1305(key, message) {
            let r = 0n, s = 0n, acc = 0n;
            for (let i = 15; i >= 0; i--) r = (r << 8n) | BigInt(key[i]);
            for (let i = 31; i >= 16; i--) s = (s << 8n) | BigInt(key[i]);
            r &= 0x0ffffffc0ffffffc0ffffffc0fffffffn;
            const p = (1n << 130n) - 5n;
            for (let i = 0; i < message.length; i += 16) {
              const chunk = message.subarray(i, i + 16);
              let n = 1n;
              for (let j = chunk.length - 1; j >= 0; j--) n = (n << 8n) | BigInt(chunk[j]);
              acc = ((acc + n) * r) % p;
            }
            acc = (acc + s) & ((1n << 128n) - 1n);
            const tag = new Uint8Array(16);
            for (let i = 0; i < 16; i++) { tag[i] = Number(acc & 255n); acc >>= 8n; }
            return tag;
          }
          function pad16(n) { return new Uint8Array((16 - (n % 16)) % 16); }
          function le64(n) { const out = new Uint8Array(8); new DataView(out.buffer).setUint32(0, n, true); return out; }
          function openXChaCha(sealed, key, aad) {
            if (sealed.length < 24 + 16) return null;
            const nonce = sealed.subarray(0, 24), body = sealed.subarray(24, sealed.length - 16), tag = sealed.subarray(sealed.length - 16);
            const subkey = hchacha(key, nonce.subarray(0, 16));
            const nonce12 = concat(new Uint8Array(4), nonce.subarray(16, 24));
            const polyKey = chachaStream(subkey, nonce12, 0, 32);
            const mac = [aad, pad16(aad.length), body, pad16(body.length), le64(aad.length), le64(body.length)].reduce(concat);
            const expected = poly1305(polyKey, mac);
            let difference = 0;
            for (let i = 0; i < 16; i++) difference |= expected[i] ^ tag[i];
            if (difference !== 0) return null;
            const stream = chachaStream(subkey, nonce12, 1, body.length);
            return body.map(function (b, i) { return b ^ stream[i]; });
          }
          // A box sealed for an invite: AAD is the canonical encoding of `domain` and the invite id.
          function openForInvite(sealedText, key, id, domainText) {
            const sealed = base64url(sealedText);
            if (sealed === null) return null;
            const domain = utf8(domainText);
            const length = function (n) { const out = new Uint8Array(4); new DataView(out.buffer).setUint32(0, n); return out; };
            const aad = [length(domain.length), domain, length(id.length), id].reduce(concat);
            const plain = openXChaCha(sealed, key, aad);
            if (plain === null) return null;
            try { return new TextDecoder("utf-8", { fatal: true }).decode(plain); } catch (error) { return null; }
          }
          // SealedBranding.open.
          function openBranding(sealedText, key, id) { return openForInvite(sealedText, key, id, "eleven/key-invite-branding/v1"); }
          // InviteNames.open: the invitee's and inviter's names, under the link's wrap key.
          function openNames(sealedText, key, id) {
            const text = sealedText ? openForInvite(sealedText, key, id, "eleven/key-invite-names/v1") : null;
            if (text === null) return {};
            try {
              const names = JSON.parse(text);
              return {
                person: typeof names.person === "string" ? names.person : null,
                inviter: typeof names.inviter === "string" ? names.inviter : null
              };
            } catch (error) { return {}; }
          }

          // LinkSecret.derive(): HKDF-SHA256(T, salt, label); the invite id has 16 bytes
          // ("eleven/key-invite/id"), the wrap key 32 ("eleven/key-invite/wrap-key").
          async function linkKey(secret, label, count) {
            const salt = utf8("eleven/key-invite/v1"), info = utf8(label);
            if (window.crypto && crypto.subtle) {
              $("card").dataset.derived = "webcrypto";
              const key = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveBits"]);
              const bits = await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: salt, info: info }, key, count * 8);
              return new Uint8Array(bits);
            }
            $("card").dataset.derived = "fallback";
            return hkdfFallback(secret, salt, info, count);
          }
          function inviteID(secret) { return linkKey(secret, "eleven/key-invite/id", 16); }

          const $ = function (id) { return document.getElementById(id); };
          function show(id, text) { const node = $(id); node.textContent = text; node.hidden = false; }
          function setState(state, text) { $("card").dataset.state = state; show("state", text); }

          function shellQuote(text) { return "'" + text.replace(/'/g, "'\\''") + "'"; }

          function offerActions(link) {
            $("open").href = "elevenmessenger://add?url=" + encodeURIComponent(link);
            $("command").textContent = "eleven join " + shellQuote(link);
            $("actions").hidden = false;
            $("copy").addEventListener("click", function () {
              const text = $("command").textContent;
              const done = function () { $("copied").textContent = "Copied."; };
              if (navigator.clipboard && navigator.clipboard.writeText) {
                navigator.clipboard.writeText(text).then(done, function () { selectCommand(); });
              } else { selectCommand(); }
            });
          }
          function selectCommand() {
            const range = document.createRange();
            range.selectNodeContents($("command"));
            const selection = window.getSelection();
            selection.removeAllRanges();
            selection.addRange(range);
            $("copied").textContent = "Selected: press Ctrl+C (or \u2318C) to copy.";
          }

          const STATES = {
            invite_expired: ["expired", "This invite has expired. Ask for a new one."],
            invite_used: ["used", "This invite has been used up. Invites work a set number of times: ask for a new one."],
            inviter_removed: ["cancelled", "This invite was cancelled: the person who made it is no longer in the space."],
            unknown_invite: ["not-found", "This invite was not found on this server. Check the link, or ask for a new one."]
          };

          function showCard(invite, link, id, wrapKey) {
            // Names travel sealed under the link; an invite minted by an older client has them in clear.
            const names = openNames(invite.sealedNames, wrapKey, id);
            const inviterName = names.inviter || invite.inviterName;
            const personName = names.person || invite.personName;
            const opened = invite.sealedBranding && link.branding ? openBranding(invite.sealedBranding, link.branding, id) : null;
            if (opened) {
              show("title", opened);
              $("card").dataset.sealed = "opened";
            } else if (invite.sealedBranding) {
              show("title", "A private space");
              $("card").dataset.sealed = "closed";
            } else if (invite.spaceName) {
              show("title", invite.spaceName);
              if (typeof invite.avatar === "string" && invite.avatar.startsWith("/")) {
                $("picture").src = invite.avatar;
                $("picture").alt = "Picture of " + invite.spaceName;
                $("picture").hidden = false;
              }
            }
            if (invite.shape === "setup") {
              show("inviter", "You are invited to set up this space as its owner.");
            } else if (invite.shape === "device") {
              show("inviter", "This adds a device to " + (inviterName || "an account") + ".");
            } else if (inviterName) {
              show("inviter", inviterName + (invite.shape === "dm" ? " invited you to a direct conversation." : " invited you."));
            }
            const suggested = personName || (link.name && link.name !== invite.spaceName && link.name !== opened ? link.name : null);
            if (suggested && invite.shape !== "device" && invite.shape !== "setup") show("suggested", "Suggested name: " + suggested);
            const days = Math.max(0, Math.round((invite.expiresAt * 1000 - Date.now()) / 86400000));
            const until = new Date(invite.expiresAt * 1000).toISOString().slice(0, 10);
            setState("ready", "Ready: this invite works " + (invite.usesLeft === 1 ? "once" : invite.usesLeft + " more times")
              + ", until " + until + (days > 0 ? " (" + days + (days === 1 ? " day)." : " days).") : "."));
          }

          async function main() {
            const href = window.location.href;
            const hash = href.indexOf("#");
            let link;
            try {
              link = parse(hash < 0 ? "" : href.slice(hash + 1));
            } catch (error) {
              if (!(error instanceof LinkProblem)) throw error;
              setState("invalid", error.message);
              return;
            }
            $("card").dataset.format = link.format;
            if (link.kind === "code") {
              show("title", link.name);
              show("code", link.code);
              $("code-box").hidden = false;
              setState("code", "A short code works only while its invite is open: join with it soon.");
              offerActions(href);
              return;
            }
            offerActions(href);
            const idBytes = await inviteID(link.secret);
            const id = base64urlEncode(idBytes);
            $("card").dataset.invite = id;
            let response;
            try {
              response = await fetch("/api/key-invite/" + id, { cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" });
            } catch (error) {
              setState("unreachable", "The server could not be reached. Your invite is fine: open it with Eleven.");
              return;
            }
            let body = null;
            try { body = await response.json(); } catch (error) { body = null; }
            if (response.ok && body) {
              showCard(body, link, idBytes, await linkKey(link.secret, "eleven/key-invite/wrap-key", 32));
              return;
            }
            const known = body && STATES[body.error];
            // A dead invite: nothing to open or paste; the words say what to do.
            if (known) { setState(known[0], known[1]); $("actions").hidden = true; }
            else setState("unreachable", "The server could not say what this invite is (" + response.status + "). Try Eleven.");
          }

          document.addEventListener("DOMContentLoaded", function () {
            main().catch(function (error) { setState("invalid", "This invite could not be read: " + error.message); });
          });
        })();

        """#
}
