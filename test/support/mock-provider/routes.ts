import { anthropicMessages, chatCompletions, embeddings, models } from './completions.js';
import { echoAuth, echoBody, echoKeyAsModel, echoKeyCompressed, echoKeyEncoded } from './echo.js';
import { sendError, type Ctx } from './respond.js';
import { big, repeatedHeaders, resetMidStream, slow, slowBody, status } from './transport.js';
import { usageSplit } from './usage-answers.js';

interface Route {
  pattern: RegExp;
  handle(ctx: Ctx, match: RegExpExecArray): Promise<void>;
}

// Anchored at the end only, so any `/<prefix>` in front (e.g. `/openai/v1/...` through a proxy) still matches.
const routes: Route[] = [
  // Also matches with a suffix, so an SDK pointed at `<url>/status/429/v1` gets that error from every call.
  { pattern: /\/status\/(\d{3})(?:\/|$)/, handle: status },
  { pattern: /\/v1\/chat\/completions$/, handle: chatCompletions },
  { pattern: /\/v1\/messages$/, handle: anthropicMessages },
  { pattern: /\/v1\/models$/, handle: models },
  { pattern: /\/v1\/embeddings$/, handle: embeddings },
  { pattern: /\/echo-auth$/, handle: echoAuth },
  { pattern: /\/echo-key-encoded$/, handle: echoKeyEncoded },
  { pattern: /\/echo-key-as-model$/, handle: echoKeyAsModel },
  { pattern: /\/echo-key-compressed$/, handle: echoKeyCompressed },
  { pattern: /\/slow$/, handle: slow },
  { pattern: /\/slow-body$/, handle: slowBody },
  { pattern: /\/reset-mid-stream$/, handle: resetMidStream },
  { pattern: /\/big$/, handle: big },
  { pattern: /\/usage-split$/, handle: usageSplit },
  { pattern: /\/echo-body$/, handle: echoBody },
  { pattern: /\/repeated-headers$/, handle: repeatedHeaders },
];

/** Answers from the first matching route; a handler that throws ends its response rather than the process. */
export async function answer(ctx: Ctx): Promise<void> {
  const { req, res, url } = ctx;
  try {
    for (const route of routes) {
      const match = route.pattern.exec(url.pathname);
      if (match) return await route.handle(ctx, match);
    }
    sendError(res, 404, `No mock route for ${req.method ?? ''} ${url.pathname}`);
  } catch (err) {
    if (ctx.signal.aborted) {
      res.destroy();
      return;
    }
    if (!res.headersSent) {
      sendError(res, 500, `Mock provider failure: ${err instanceof Error ? err.message : String(err)}`);
    } else {
      res.destroy();
    }
  }
}
