import { TokenProxyError } from '../errors/tokenproxy-error.js';
import type { ApiServer } from './context.js';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

function isValidJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** How the management API reads request bodies: JSON only, strict UTF-8, prototype keys refused. */
export function registerJsonBodies(app: ApiServer): void {
  // Fastify also parses text/plain by default, which turned a JSON object sent as text/plain into a
  // string and a misleading "must be a JSON object" 400 instead of a 415.
  app.removeContentTypeParser('text/plain');
  // `curl -X DELETE -H 'Content-Type: application/json'` sends the header with no body: that is a
  // request without a body, not invalid JSON. A non-empty body still goes through Fastify's parser.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    // Decoded strictly: a lenient decode turns bytes that are not UTF-8 into U+FFFD, which would be
    // stored as the name the caller never sent.
    let text: string;
    try {
      text = STRICT_UTF8.decode(body as Buffer);
    } catch {
      done(
        new TokenProxyError(
          'invalid_json',
          'The request body is not valid UTF-8. Send JSON encoded as UTF-8.',
        ),
      );
      return;
    }
    void parseJson(request, text, (err, value) => {
      // Fastify's parser refuses keys that could reach an object's prototype with the same error as
      // broken JSON; the body is valid JSON if the plain parser takes it, and the message says why.
      if (err !== null && isValidJson(text)) {
        done(
          new TokenProxyError(
            'invalid_json',
            'The request body holds a "__proto__" key, or "constructor" with "prototype" inside, which is refused. Remove it.',
          ),
        );
        return;
      }
      done(err, value);
    });
  });
}
