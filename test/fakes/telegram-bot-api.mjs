/**
 * A fake Telegram Bot API for the tests: a Node HTTP server on 127.0.0.1 serving
 * `POST /bot<token>/<method>` as the published Bot API does (https://core.telegram.org/bots/api):
 * the token in the path, a JSON body, each method's required parameters and limits checked
 * (`text` 1–4096 characters, an inline keyboard's buttons with exactly one action, `callback_data`
 * 1–64 bytes, a callback answer's `text` ≤ 200 characters), answers `{ok, result}` or
 * `{ok: false, error_code, description, parameters}`. Telegram is the one part outside this
 * machine, so it is faked here; Tapgate's own parts are real.
 *
 * For the tests: `GET /__calls` lists every call received (method, body and the result answered, in order), and
 * `POST /__fail` `{method, chat_id, error_code, description, retry_after?}` makes the next such
 * call to that chat fail as Telegram would (429 with `retry_after`, 403 blocked, 5xx), or with
 * `hang: true` never answer.
 */
import { createServer } from "node:http";

export const FAKE_BOT_USERNAME = "tapgate_test_bot";

/**
 * Starts the fake for `token`; resolves with its base URL (`TELEGRAM_API_URL`) and `close`.
 * The server does not keep the process alive.
 * @param {string} token
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function startFakeTelegram(token) {
  /** @type {Array<{ method: string, body: Record<string, unknown>, result: unknown }>} */
  const calls = [];
  /** @type {Array<{ method: string, chat_id: string, error_code: number, description: string, retry_after?: number, hang?: boolean }>} */
  const failures = [];
  /** Messages sent, by `chat_id:message_id`: their text and keyboard, so edits are checked as Telegram would. */
  const messages = new Map();
  let nextMessageId = 1;

  const server = createServer(async (req, res) => {
    /** @type {{ result: unknown } | undefined} */
    let call;
    const answer = (status, body) => {
      if (call && body.ok) call.result = body.result;
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const fail = (code, description, parameters) =>
      answer(code, { ok: false, error_code: code, description, ...(parameters && { parameters }) });
    const raw = await readBody(req);
    const url = new URL(req.url ?? "/", "http://fake");

    if (req.method === "GET" && url.pathname === "/__calls") return answer(200, calls);
    if (req.method === "POST" && url.pathname === "/__fail") {
      failures.push(JSON.parse(raw));
      return answer(200, { ok: true });
    }

    const route = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!route) return fail(404, "Not Found");
    if (route[1] !== token) return fail(401, "Unauthorized");
    const method = route[2];
    if (req.method !== "POST" || !/^application\/json\b/.test(req.headers["content-type"] ?? "")) {
      return fail(400, "Bad Request: this fake takes JSON POSTs, as grammY sends them");
    }
    /** @type {Record<string, unknown>} */
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      return fail(400, "Bad Request: can't parse JSON");
    }
    call = { method, body, result: undefined };
    calls.push(call);

    const scripted = failures.findIndex((f) => f.method === method && f.chat_id === String(body.chat_id));
    if (scripted >= 0) {
      const [f] = failures.splice(scripted, 1);
      // `hang`: Telegram never answers; only the caller's timeout ends the wait.
      if (f.hang) return;
      return fail(
        f.error_code,
        f.description,
        f.retry_after === undefined ? undefined : { retry_after: f.retry_after },
      );
    }

    const problem = checkParameters(method, body);
    if (problem) return fail(400, `Bad Request: ${problem}`);

    switch (method) {
      case "getMe":
        return answer(200, {
          ok: true,
          result: { id: 777000111, is_bot: true, first_name: "Tapgate", username: FAKE_BOT_USERNAME },
        });
      case "sendMessage": {
        const message = {
          message_id: nextMessageId++,
          date: Math.floor(Date.now() / 1000),
          chat: { id: Number(body.chat_id), type: "private" },
          text: body.text,
          ...(body.reply_markup && { reply_markup: body.reply_markup }),
        };
        messages.set(`${body.chat_id}:${message.message_id}`, message);
        return answer(200, { ok: true, result: message });
      }
      case "editMessageText": {
        const key = `${body.chat_id}:${body.message_id}`;
        const message = messages.get(key);
        if (!message) return fail(400, "Bad Request: message to edit not found");
        const markup = JSON.stringify(body.reply_markup ?? null);
        if (message.text === body.text && JSON.stringify(message.reply_markup ?? null) === markup) {
          return fail(400, "Bad Request: message is not modified");
        }
        const edited = { ...message, text: body.text, reply_markup: body.reply_markup };
        if (!body.reply_markup) delete edited.reply_markup;
        messages.set(key, edited);
        return answer(200, { ok: true, result: edited });
      }
      case "answerCallbackQuery":
        return answer(200, { ok: true, result: true });
      default:
        return fail(404, "Not Found: method not found");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  server.unref();
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("the fake Telegram has no port");
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () => new Promise((resolve) => server.close(() => resolve(undefined))),
  };
}

/** @param {import("node:http").IncomingMessage} req */
async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The published parameters each method requires, and their limits: a problem in Telegram's
 * words, or null.
 * @param {string} method
 * @param {Record<string, unknown>} body
 * @returns {string | null}
 */
function checkParameters(method, body) {
  const isChat = (v) => (typeof v === "number" && Number.isInteger(v)) || (typeof v === "string" && v !== "");
  const isText = (v) => typeof v === "string" && v.length >= 1 && v.length <= 4096;
  switch (method) {
    case "getMe":
      return null;
    case "sendMessage":
      if (!isChat(body.chat_id)) return "chat_id is empty";
      if (!isText(body.text)) return "message text is empty or too long";
      return checkKeyboard(body.reply_markup);
    case "editMessageText":
      if (!isChat(body.chat_id) || !Number.isInteger(body.message_id)) return "message identifier is not specified";
      if (!isText(body.text)) return "message text is empty or too long";
      return checkKeyboard(body.reply_markup);
    case "answerCallbackQuery":
      if (typeof body.callback_query_id !== "string" || body.callback_query_id === "") return "query_id is empty";
      if (body.text !== undefined && (typeof body.text !== "string" || body.text.length > 200)) {
        return "MESSAGE_TOO_LONG";
      }
      return null;
    default:
      return null;
  }
}

/** An InlineKeyboardMarkup: rows of buttons, each with a text and exactly one action. */
function checkKeyboard(markup) {
  if (markup === undefined) return null;
  if (!markup || !Array.isArray(markup.inline_keyboard))
    return 'field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays';
  for (const row of markup.inline_keyboard) {
    if (!Array.isArray(row)) return 'field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays';
    for (const button of row) {
      if (typeof button?.text !== "string" || button.text === "")
        return "text buttons are unallowed in the inline keyboard";
      const actions = ["url", "callback_data", "login_url", "switch_inline_query", "web_app", "pay"].filter(
        (field) => button[field] !== undefined,
      );
      if (actions.length !== 1) return "BUTTON_TYPE_INVALID";
      if (button.callback_data !== undefined) {
        const bytes = Buffer.byteLength(String(button.callback_data), "utf8");
        if (bytes < 1 || bytes > 64) return "BUTTON_DATA_INVALID";
      }
      if (button.url !== undefined && !/^(https?|tg):\/\//.test(String(button.url))) return "BUTTON_URL_INVALID";
    }
  }
  return null;
}
