// The demo's static server: www/ at /, the npm package (wasm/npm) at /pkg/,
// on 127.0.0.1 only. `node www/serve.mjs [--port N]` (0 or none: a free
// port). Prints `PORT <n>` then the URL, and runs until it is killed.
// Only GET and HEAD of files under those two folders.
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { dirname, extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const www = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(www, '../wasm/npm');
const portArg = process.argv.indexOf('--port');
const port = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.png': 'image/png',
};

/** The file a URL path names, or null outside the served folders. */
function fileOf(pathname) {
  const [root, rest] = pathname.startsWith('/pkg/') ? [pkg, pathname.slice(4)] : [www, pathname];
  const path = normalize(join(root, rest.endsWith('/') ? `${rest}index.html` : rest));
  if (root === www && (path.startsWith(join(www, 'node_modules')) || path.startsWith(join(www, 'test')))) return null;
  return path.startsWith(root + sep) ? path : null;
}

const server = createServer(async (request, response) => {
  let path = null;
  try {
    path = fileOf(decodeURIComponent(new URL(request.url, 'http://x').pathname));
  } catch {
    // A malformed URL: refused below.
  }
  if (!['GET', 'HEAD'].includes(request.method) || path === null) {
    response.writeHead(403).end();
    return;
  }
  try {
    const body = await readFile(path);
    response.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : body);
  } catch {
    response.writeHead(404).end();
  }
});
server.listen(port, '127.0.0.1', () => {
  const { port: bound } = server.address();
  console.log(`PORT ${bound}`);
  console.log(`loomfence demo: http://127.0.0.1:${bound}/`);
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
