#!/usr/bin/env bats
# node:fs and node:crypto through the binary: the VFS never touches the host
# disk, `..` clamps at its root, its state is journaled and replayed.
load helpers

@test "node:fs: sync, callback and promise forms on the parent's in-memory tree; replay is exact" {
  agent f.mjs <<'JS'
import fs from 'node:fs';
import fsp from 'node:fs/promises';
export default async function main() {
  fs.mkdirSync('/work/a/b', { recursive: true });
  fs.writeFileSync('/work/a/b/x.txt', 'héllo');
  fs.appendFileSync('/work/a/b/x.txt', ' world');
  await fsp.writeFile('/work/bin', new Uint8Array([0, 1, 254, 255]));
  const viaCb = await new Promise((res, rej) => fs.readFile('/work/a/b/x.txt', 'utf8', (e, d) => (e ? rej(e) : res(d))));
  const st = fs.statSync('/work/a/b/x.txt');
  let missing; try { fs.readFileSync('/nope'); } catch (e) { missing = [e.code, e.syscall, e.path, e.message]; }
  fs.renameSync('/work/a/b/x.txt', '/work/y.txt');
  return {
    text: fs.readFileSync('/work/y.txt', 'utf8'), viaCb, size: st.size, isFile: st.isFile(),
    bytes: Array.from(await fsp.readFile('/work/bin')), list: fs.readdirSync('/work').sort(),
    exists: [fs.existsSync('/work/y.txt'), fs.existsSync('/work/a/b/x.txt')], missing,
  };
}
JS
  chid run --quiet --journal "$T/j" "$T/f.mjs"
  assert_status 0
  first=$output
  [[ $output == *'"text":"héllo world","viaCb":"héllo world","size":12,"isFile":true'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"bytes":[0,1,254,255],"list":["a","bin","y.txt"],"exists":[true,false]'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"missing":["ENOENT","open","/nope","ENOENT: no such file or directory, open '"'/nope'"'"]'* ]] || { echo "$output"; return 1; }
  [[ ! -e /work/y.txt && ! -e /work/bin ]]
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout "$first"
}

@test "node:fs: '..' clamps at the VFS root; the host disk is never read or written" {
  echo "HOST SECRET" >"$T/secret"
  agent t.js <<JS
const fs = require('fs');
module.exports = async () => {
  const out = [];
  for (const p of ['/../../etc/passwd', '../../../etc/passwd', '/etc/../../../etc/shadow', '$T/secret',
                   '/proc/self/environ', '//etc//passwd', '/./../etc/hostname', 'a/../../../../root/.bashrc']) {
    try { out.push(fs.readFileSync(p, 'utf8')); } catch (e) { out.push(e.code); }
  }
  fs.mkdirSync('/etc', { recursive: true });
  fs.writeFileSync('/../../etc/passwd', 'vfs only');
  out.push(fs.readFileSync('/etc/passwd', 'utf8'));
  fs.mkdirSync("$T", { recursive: true }); fs.writeFileSync("$T/written-through", "x"); out.push(fs.readFileSync("$T/written-through", "utf8"));
  return out;
};
JS
  chid run --quiet "$T/t.js"
  assert_status 0
  assert_stdout '["ENOENT","ENOENT","ENOENT","ENOENT","ENOENT","ENOENT","ENOENT","ENOENT","vfs only","x"]'
  [[ ! -e $T/written-through ]]
  grep -q '^root:' /etc/passwd
}

@test "node:fs: the total size is capped and a full VFS fails cleanly" {
  agent c.js <<'JS'
const fs = require('node:fs');
module.exports = async () => {
  const mb = new Uint8Array(1 << 20);
  let n = 0;
  try { for (;;) { fs.writeFileSync('/f' + n, mb); n++; } } catch (e) { return [e.code, n >= 32 && n <= 64]; }
};
JS
  chid run --quiet "$T/c.js"
  assert_status 0
  assert_stdout '["ENOSPC",true]'
}

@test "node:crypto hashes in the box; its randomness comes from the parent and replays" {
  agent h.js <<'JS'
const crypto = require('node:crypto');
module.exports = async () => ({
  sha256: crypto.createHash('sha256').update('abc').digest('hex'),
  md5: crypto.createHash('md5').update('').digest('hex'),
  sha512: crypto.hash('sha512', 'abc').slice(0, 16),
  hmac: crypto.createHmac('sha256', 'key').update('The quick brown fox jumps over the lazy dog').digest('hex'),
  subtle: Array.from(new Uint8Array(await crypto.subtle.digest('SHA-1', new TextEncoder().encode('abc')))).slice(0, 4),
  rand: crypto.randomBytes(8).length, uuid: crypto.randomUUID(), same: crypto.webcrypto === globalThis.crypto,
});
JS
  chid run --quiet --journal "$T/j" "$T/h.js"
  assert_status 0
  first=$output
  [[ $output == *'"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"md5":"d41d8cd98f00b204e9800998ecf8427e","sha512":"ddaf35a193617aba"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"hmac":"f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"'* ]] || { echo "$output"; return 1; }
  [[ $output == *'"subtle":[169,153,62,54],"rand":8'*'"same":true'* ]] || { echo "$output"; return 1; }
  chid replay --quiet "$T/j"
  assert_status 0
  assert_stdout "$first"
}
