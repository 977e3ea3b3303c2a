/**
 * "Link Telegram" on the Devices screen: where this server has a Telegram bot, a member who may
 * decide links their private chat with it through the deep link `https://t.me/<bot>?start=<code>`
 * (`POST /v1/channels/telegram/link`: a one-time code, 10 minutes), or unlinks it. Shows nothing
 * when Telegram is not set up here. The Channels screen shows every channel to the team.
 */

import { useEffect, useState } from "preact/hooks";
import type { ChannelLinkCode, ChannelStatus } from "../../../sdk/src/human/channels";
import { api, canDecide } from "../api";
import { withReauth } from "../reauth";
import { useAction } from "../use-action";
import { useMe } from "../viewer";
import { Banner } from "./Banner";

export function TelegramLink() {
  const me = useMe();
  const [status, setStatus] = useState<ChannelStatus | null>(null);
  const [link, setLink] = useState<ChannelLinkCode | null>(null);
  const { busy, error, run } = useAction();
  const load = () =>
    api.channels().then((r) => {
      setStatus(r.channels.find((c) => c.channel === "telegram") ?? null);
      setLink(null);
    });
  // Without the list the panel is simply not shown: the rest of the screen does not depend on it.
  useEffect(() => void load().catch(() => setStatus(null)), []);
  if (!status?.setUp || !canDecide(me?.role)) return null;

  return (
    <section class="panel" data-testid="telegram-link">
      <h2>Telegram</h2>
      {status.linked ? (
        <p data-testid="telegram-linked">
          Requests can reach you in your chat with the Tapgate bot.{" "}
          <button
            type="button"
            class="link-button"
            disabled={busy}
            onClick={() => run(() => api.unlinkChannel("telegram").then(load))}
            data-testid="telegram-unlink"
          >
            Unlink
          </button>
        </p>
      ) : (
        <>
          <p class="muted">
            Get requests in Telegram too, with Allow once and Deny. It shows what your lock screen shows; a high-risk
            request is allowed only here, with your passkey.
          </p>
          {link ? (
            <p data-testid="telegram-link-ready">
              {link.url ? (
                <a class="button" href={link.url} target="_blank" rel="noopener noreferrer" data-testid="telegram-open">
                  Open Telegram
                </a>
              ) : (
                <code>/start {link.code}</code>
              )}{" "}
              and press Start; the link works once, for 10 minutes.{" "}
              <button
                type="button"
                class="link-button"
                disabled={busy}
                onClick={() => run(load)}
                data-testid="telegram-link-done"
              >
                Done
              </button>
            </p>
          ) : (
            <button
              type="button"
              class="button"
              disabled={busy}
              onClick={() => run(async () => setLink(await withReauth(() => api.linkChannel("telegram"))))}
              data-testid="telegram-link-start"
            >
              Link Telegram
            </button>
          )}
        </>
      )}
      {error && (
        <Banner tone="error" testId="telegram-link-error">
          {error}
        </Banner>
      )}
    </section>
  );
}
