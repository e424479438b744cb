// engine/node/url.js — node:url: the legacy parse/format/resolve of the npm
// `url` package, the WHATWG URL and URLSearchParams (engine/web.js), and
// fileURLToPath / pathToFileURL / urlToHttpOptions (POSIX paths).
'use strict';
const legacy = require('url/');

function fileURLToPath(u) {
        const url = typeof u === 'string' ? new URL(u) : u;
        if (url === null || typeof url !== 'object' || typeof url.href !== 'string') {
                const e = new TypeError('The "path" argument must be of type string or an instance of URL. Received ' + typeof u);
                e.code = 'ERR_INVALID_ARG_TYPE';
                throw e;
        }
        if (url.protocol !== 'file:') {
                const e = new TypeError('The URL must be of scheme file');
                e.code = 'ERR_INVALID_URL_SCHEME';
                throw e;
        }
        if (url.hostname !== '') {
                const e = new TypeError('File URL host must be "localhost" or empty on linux');
                e.code = 'ERR_INVALID_FILE_URL_HOST';
                throw e;
        }
        const p = url.pathname;
        if (/%2f/i.test(p)) {
                const e = new TypeError('File URL path must not include encoded / characters');
                e.code = 'ERR_INVALID_FILE_URL_PATH';
                throw e;
        }
        return decodeURIComponent(p);
}

function pathToFileURL(p) {
        const path = require('path-browserify');
        let abs = path.resolve(String(p));
        if (String(p).endsWith('/') && !abs.endsWith('/'))
                abs += '/';
        const enc = abs.replace(/%/g, '%25').replace(/\\/g, '%5C').replace(/\n/g, '%0A').replace(/\r/g, '%0D')
                .replace(/\t/g, '%09').replace(/#/g, '%23').replace(/\?/g, '%3F');
        return new URL('file://' + enc);
}

function urlToHttpOptions(url) {
        const o = {
                protocol: url.protocol,
                hostname: typeof url.hostname === 'string' && url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
                hash: url.hash, search: url.search, pathname: url.pathname,
                path: (url.pathname || '') + (url.search || ''), href: url.href,
        };
        if (url.port !== '')
                o.port = Number(url.port);
        if (url.username || url.password)
                o.auth = decodeURIComponent(url.username) + ':' + decodeURIComponent(url.password);
        return o;
}

module.exports = {
        URL: globalThis.URL, URLSearchParams: globalThis.URLSearchParams,
        parse: legacy.parse, format: legacy.format, resolve: legacy.resolve, resolveObject: legacy.resolveObject,
        Url: legacy.Url, fileURLToPath, pathToFileURL, urlToHttpOptions,
        domainToASCII: (d) => {
                try {
                        return new URL('http://' + d).hostname;
                } catch (e) {
                        return '';
                }
        },
};
