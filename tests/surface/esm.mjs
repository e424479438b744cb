// tests/surface/esm.mjs — every provided node: module imported both ways
// (node:x and x), default and named imports; node is the oracle.
import path from 'node:path';
import pathBare from 'path';
import posix from 'path/posix';
import { EventEmitter } from 'events';
import * as eventsNs from 'node:events';
import { Buffer } from 'node:buffer';
import { promisify, format } from 'util';
import { types } from 'node:util';
import { isDate } from 'util/types';
import { setTimeout as sleep } from 'node:timers/promises';
import { setImmediate as si } from 'timers';
import assert, { strict } from 'assert';
import strictAssert from 'node:assert/strict';
import { Readable, PassThrough } from 'stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'string_decoder';
import qs from 'node:querystring';
import url, { fileURLToPath } from 'url';
import proc from 'node:process';
import { readFileSync } from 'fs';

export default async function () {
  await sleep(1);
  await new Promise((r) => si(r));
  strictAssert.equal(1, 1);
  assert.ok(strict === strictAssert);
  const got = [];
  await pipeline(Readable.from(['a']), new PassThrough(), async function (src) { for await (const c of src) got.push(String(c)); });
  return [path === pathBare, posix === path, typeof EventEmitter, typeof eventsNs.once, Buffer.from('hi').toString('hex'),
    typeof promisify, format('%d', 7), types.isDate(new Date()), isDate(1), got,
    new StringDecoder('utf8').write(Buffer.from('é')), qs.stringify({ a: 1 }), typeof url.parse,
    fileURLToPath('file:///x/y'), proc === process, typeof readFileSync];
}
