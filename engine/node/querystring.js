// engine/node/querystring.js — node:querystring: the npm querystring-es3
// package (parse/stringify, Node's legacy module) plus escape/unescape.
'use strict';
const base = require('querystring-es3');

// Node's escape: encodeURIComponent, which leaves the same characters
// (A-Z a-z 0-9 - _ . ! ~ * ' ( )) unescaped.
function escape(s) {
        return encodeURIComponent(typeof s === 'string' ? s : String(s));
}
function unescape(s) {
        try {
                return decodeURIComponent(s);
        } catch (e) {
                return unescapeBuffer(s);
        }
}
// Malformed %-sequences stay as they are (Node's unescapeBuffer).
function unescapeBuffer(s) {
        return String(s).replace(/(%[0-9a-fA-F]{2})+/g, (m) => {
                try {
                        return decodeURIComponent(m);
                } catch (e) {
                        return m;
                }
        });
}
module.exports = Object.assign({}, base, { escape, unescape });
