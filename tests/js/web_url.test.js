// URL: WHATWG URL parsing, serialisation, setters. Every expected value in
// the PARSE table was produced by Node 20's URL on the same input.
// Fields: href protocol username password host hostname port pathname search hash origin
var PARSE = [
        ["http://2130706433/", null, "IPv4 single decimal number",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://0x7f.1/", null, "IPv4 hex + short form",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://017700000001/", null, "IPv4 single octal number",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://[::ffff:127.0.0.1]/", null, "IPv4-mapped IPv6 compressed",
         ["http://[::ffff:7f00:1]/","http:","","","[::ffff:7f00:1]","[::ffff:7f00:1]","","/","","","http://[::ffff:7f00:1]"]],
        ["http://127.1/", null, "IPv4 two parts",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://0177.0.0.1/", null, "IPv4 octal part",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://0x7f000001/", null, "IPv4 single hex number",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://127.0.0.1./", null, "IPv4 trailing dot",
         ["http://127.0.0.1/","http:","","","127.0.0.1","127.0.0.1","","/","","","http://127.0.0.1"]],
        ["http://0x/", null, "IPv4 bare 0x",
         ["http://0.0.0.0/","http:","","","0.0.0.0","0.0.0.0","","/","","","http://0.0.0.0"]],
        ["http://0300.0250.0.1/", null, "IPv4 octal private range",
         ["http://192.168.0.1/","http:","","","192.168.0.1","192.168.0.1","","/","","","http://192.168.0.1"]],
        ["http://4294967295/", null, "IPv4 max",
         ["http://255.255.255.255/","http:","","","255.255.255.255","255.255.255.255","","/","","","http://255.255.255.255"]],
        ["http://[0:0:0:0:0:0:0:1]/", null, "IPv6 loopback compressed",
         ["http://[::1]/","http:","","","[::1]","[::1]","","/","","","http://[::1]"]],
        ["http://[1:0:0:2:0:0:0:3]/", null, "IPv6 longest zero run",
         ["http://[1:0:0:2::3]/","http:","","","[1:0:0:2::3]","[1:0:0:2::3]","","/","","","http://[1:0:0:2::3]"]],
        ["http://[1:0:0:2:0:0:3:4]/", null, "IPv6 first of equal zero runs",
         ["http://[1::2:0:0:3:4]/","http:","","","[1::2:0:0:3:4]","[1::2:0:0:3:4]","","/","","","http://[1::2:0:0:3:4]"]],
        ["http://[FFFF::ABCD]:8080/x", null, "IPv6 lowercased with port",
         ["http://[ffff::abcd]:8080/x","http:","","","[ffff::abcd]:8080","[ffff::abcd]","8080","/x","","","http://[ffff::abcd]:8080"]],
        ["http://[::1.2.3.4]/", null, "IPv6 with embedded IPv4",
         ["http://[::102:304]/","http:","","","[::102:304]","[::102:304]","","/","","","http://[::102:304]"]],
        ["HTTP://EXAMPLE.COM:80/a/b?c#d", null, "scheme/host lowercase, default port dropped",
         ["http://example.com/a/b?c#d","http:","","","example.com","example.com","","/a/b","?c","#d","http://example.com"]],
        ["https://user:pass@host:8443/p?q=1#f", null, "userinfo and port",
         ["https://user:pass@host:8443/p?q=1#f","https:","user","pass","host:8443","host","8443","/p","?q=1","#f","https://host:8443"]],
        ["  \t http://h/a\nb \u0001", null, "C0/space trim and tab/newline removal",
         ["http://h/ab","http:","","","h","h","","/ab","","","http://h"]],
        ["http:\\\\h2\\p\\q", null, "backslashes in special URL",
         ["http://h2/p/q","http:","","","h2","h2","","/p/q","","","http://h2"]],
        ["http://h/a/./b/../../c/", null, "dot segments",
         ["http://h/c/","http:","","","h","h","","/c/","","","http://h"]],
        ["http://h/a/%2e%2E/b", null, "percent-encoded dot segments",
         ["http://h/b","http:","","","h","h","","/b","","","http://h"]],
        ["http://h/ sp \"q\" <>`{}|^", null, "path percent-encode set",
         ["http://h/%20sp%20%22q%22%20%3C%3E%60%7B%7D|^","http:","","","h","h","","/%20sp%20%22q%22%20%3C%3E%60%7B%7D|^","","","http://h"]],
        ["http://h/?q= \"'<>`{}#f \"<>`{}", null, "special query and fragment sets",
         ["http://h/?q=%20%22%27%3C%3E`{}#f%20%22%3C%3E%60{}","http:","","","h","h","","/","?q=%20%22%27%3C%3E`{}","#f%20%22%3C%3E%60{}","http://h"]],
        ["sc://h/?q= \"'<>", null, "non-special query set keeps quote",
         ["sc://h/?q=%20%22'%3C%3E","sc:","","","h","h","","/","?q=%20%22'%3C%3E","","null"]],
        ["http://h/é?é#é", null, "UTF-8 percent-encoding",
         ["http://h/%C3%A9?%C3%A9#%C3%A9","http:","","","h","h","","/%C3%A9","?%C3%A9","#%C3%A9","http://h"]],
        ["http://us er:pa:ss@h/", null, "userinfo encoding",
         ["http://us%20er:pa%3Ass@h/","http:","us%20er","pa%3Ass","h","h","","/","","","http://h"]],
        ["http://a:b@c:d@h/", null, "second @ is encoded",
         ["http://a:b%40c%3Ad@h/","http:","a","b%40c%3Ad","h","h","","/","","","http://h"]],
        ["http://münchen.de/", null, "IDNA punycode",
         ["http://xn--mnchen-3ya.de/","http:","","","xn--mnchen-3ya.de","xn--mnchen-3ya.de","","/","","","http://xn--mnchen-3ya.de"]],
        ["http://ex%41mple.com", null, "percent-decoded host",
         ["http://example.com/","http:","","","example.com","example.com","","/","","","http://example.com"]],
        ["http://a_b*c.com", null, "non-STD3 characters allowed",
         ["http://a_b*c.com/","http:","","","a_b*c.com","a_b*c.com","","/","","","http://a_b*c.com"]],
        ["mailto:user@example.com", null, "mailto opaque path",
         ["mailto:user@example.com","mailto:","","","","","","user@example.com","","","null"]],
        ["data:text/plain,hello world", null, "data URL",
         ["data:text/plain,hello world","data:","","","","","","text/plain,hello world","","","null"]],
        ["custom://HOST/p/../q", null, "non-special with opaque host",
         ["custom://HOST/q","custom:","","","HOST","HOST","","/q","","","null"]],
        ["custom:/x/./y/../z", null, "non-special path without host",
         ["custom:/x/z","custom:","","","","","","/x/z","","","null"]],
        ["blob:https://a.com/uuid", null, "blob origin",
         ["blob:https://a.com/uuid","blob:","","","","","","https://a.com/uuid","","","https://a.com"]],
        ["file:///etc/passwd", null, "file URL",
         ["file:///etc/passwd","file:","","","","","","/etc/passwd","","","null"]],
        ["file://LOCALHOST/x", null, "file localhost becomes empty host",
         ["file:///x","file:","","","","","","/x","","","null"]],
        ["file:///C|/x/../..", null, "Windows drive letter quirk",
         ["file:///C:/","file:","","","","","","/C:/","","","null"]],
        ["ftp://h:21/", null, "ftp default port",
         ["ftp://h/","ftp:","","","h","h","","/","","","ftp://h"]],
        ["ws://h:80/", null, "ws default port",
         ["ws://h/","ws:","","","h","h","","/","","","ws://h"]],
        ["wss://h:444/", null, "wss port",
         ["wss://h:444/","wss:","","","h:444","h","444","/","","","wss://h:444"]],
        ["http://h:08080/", null, "port with leading zero",
         ["http://h:8080/","http:","","","h:8080","h","8080","/","","","http://h:8080"]],
        ["a/b/../c", "http://h/x/y/z", "relative path",
         ["http://h/x/y/a/c","http:","","","h","h","","/x/y/a/c","","","http://h"]],
        ["../../../../x", "http://h/a/b", "relative above root",
         ["http://h/x","http:","","","h","h","","/x","","","http://h"]],
        ["//other/p", "https://h/a", "scheme-relative",
         ["https://other/p","https:","","","other","other","","/p","","","https://other"]],
        ["?q", "http://h/a/b?x#y", "query-only relative",
         ["http://h/a/b?q","http:","","","h","h","","/a/b","?q","","http://h"]],
        ["#f", "http://h/a/b?x#y", "fragment-only relative",
         ["http://h/a/b?x#f","http:","","","h","h","","/a/b","?x","#f","http://h"]],
        ["", "http://h/a/b?x#y", "empty relative drops fragment",
         ["http://h/a/b?x","http:","","","h","h","","/a/b","?x","","http://h"]],
        ["/abs", "http://u@h:1/a/b", "absolute path relative",
         ["http://u@h:1/abs","http:","u","","h:1","h","1","/abs","","","http://h:1"]],
        ["http:rel", "http://h/a/b", "same-scheme relative",
         ["http://h/a/rel","http:","","","h","h","","/a/rel","","","http://h"]],
        ["\\\\x\\y", "http://h/", "backslash scheme-relative",
         ["http://x/y","http:","","","x","x","","/y","","","http://x"]],
        ["#x", "mailto:a@b", "fragment on opaque base",
         ["mailto:a@b#x","mailto:","","","","","","a@b","","#x","null"]]
];
var INVALID = [
        ["http://1.2.3.4.5", null, "too many IPv4 parts"],
        ["http://256.0.0.1", null, "IPv4 part > 255"],
        ["http://4294967296", null, "IPv4 overflow"],
        ["http://1.2.3.09", null, "bad octal"],
        ["http://foo.09", null, "ends in bad number"],
        ["http://[1::2::3]", null, "double ::"],
        ["http://[1:2:3:4:5:6:7:8:9]", null, "too many pieces"],
        ["http://[::1.2.3]", null, "short embedded IPv4"],
        ["http://[::01.2.3.4]", null, "leading zero in embedded IPv4"],
        ["http://[g::]", null, "bad hex"],
        ["http://[::1", null, "unclosed bracket"],
        ["http://h:65536/", null, "port too large"],
        ["http://h:a/", null, "non-numeric port"],
        ["http://", null, "empty host"],
        ["http://user@/", null, "credentials without host"],
        ["http://a<b/", null, "forbidden host code point"],
        ["http://a%b/", null, "percent in host"],
        ["http://%ff/", null, "invalid UTF-8 in host"],
        ["http://xn--a.com", null, "invalid punycode"],
        ["//h", null, "no scheme, no base"],
        ["h", null, "relative without base"],
        ["", null, "empty"],
        ["x", "mailto:a@b", "relative to opaque base"],
        ["1http://h", null, "scheme must start with alpha"],
        ["sc://a b/", null, "space in opaque host"]
];
var FIELDS = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port', 'pathname', 'search', 'hash', 'origin'];

PARSE.forEach(function (c) {
        test('parse: ' + c[2], function () {
                var u = c[1] === null ? new URL(c[0]) : new URL(c[0], c[1]);
                FIELDS.forEach(function (f, i) { assert.equal(u[f], c[3][i], f); });
        });
});

INVALID.forEach(function (c) {
        test('invalid: ' + c[1 + 1], function () {
                assert.throws(function () { return c[1] === null ? new URL(c[0]) : new URL(c[0], c[1]); }, { name: 'TypeError', message: 'Invalid URL' });
                assert.equal(URL.canParse(c[0], c[1] === null ? undefined : c[1]), false, 'canParse');
        });
});

test('SSRF-relevant host canonicalisation', function () {
        ['http://2130706433/', 'http://0x7f.1/', 'http://017700000001/', 'http://127.1', 'http://0x7F.0.0.1',
         'http://0177.1', 'http://127.0.0.1.', 'HTTP://127.0.0.1:80'].forEach(function (s) {
                assert.equal(new URL(s).hostname, '127.0.0.1', s);
        });
        assert.equal(new URL('http://[::ffff:127.0.0.1]/').hostname, '[::ffff:7f00:1]');
        assert.equal(new URL('http://[0:0:0:0:0:ffff:7f00:1]/').hostname, '[::ffff:7f00:1]');
        assert.equal(new URL('http://[::ffff:192.168.0.1]/').hostname, '[::ffff:c0a8:1]');
        assert.equal(new URL('http://0/').hostname, '0.0.0.0');
        assert.equal(new URL('http://169.254.169.254.').hostname, '169.254.169.254');
        assert.equal(new URL('http://0xa9fea9fe/').hostname, '169.254.169.254');
        assert.equal(new URL('http://LOCALHOST./').hostname, 'localhost.');
        assert.throws(function () { new URL('http://a.b.c.0x1/'); }, TypeError, 'ends in a number, so parsed (and rejected) as IPv4');
});

test('non-special scheme keeps IPv4-looking host opaque', function () {
        assert.equal(new URL('custom://0x7f.1/').host, '0x7f.1');
        assert.equal(new URL('custom://[::ffff:127.0.0.1]/').host, '[::ffff:7f00:1]');
});

test('spec: ".." at the end of a non-special path leaves a trailing slash (Node 20 drops it)', function () {
        assert.equal(new URL('non-special://h/a/../..').href, 'non-special://h/');
        assert.equal(new URL('http://h/a/../..').href, 'http://h/');
});

test('URL with base URL object and toString/toJSON', function () {
        var b = new URL('https://example.com/dir/page?x=1');
        var u = new URL('../up?y=2#z', b);
        assert.equal(String(u), 'https://example.com/up?y=2#z');
        assert.equal(u.toJSON(), u.href);
        assert.equal(JSON.stringify({ u: u }), '{"u":"https://example.com/up?y=2#z"}');
});

test('invalid base throws', function () {
        assert.throws(function () { new URL('/x', 'not a url'); }, TypeError);
        assert.throws(function () { new URL(); }, TypeError);
});

test('URL.canParse and URL.parse', function () {
        assert.equal(URL.canParse('https://a.com'), true);
        assert.equal(URL.canParse('/x', 'https://a.com'), true);
        assert.equal(URL.canParse('/x'), false);
        assert.equal(URL.parse('/x'), null);
        assert.equal(URL.parse('/x', 'https://a.com').href, 'https://a.com/x');
});

test('setters: protocol', function () {
        var u = new URL('http://h.com:443/');
        u.protocol = 'https';
        assert.equal(u.href, 'https://h.com/', 'default port of the new scheme is dropped');
        u.protocol = 'foo';
        assert.equal(u.href, 'https://h.com/', 'special to non-special is refused');
        u.protocol = 'WSS:xx';
        assert.equal(u.href, 'wss://h.com/');
        u = new URL('sc://h/');
        u.protocol = 'http';
        assert.equal(u.href, 'sc://h/', 'non-special to special is refused');
});

test('setters: username/password', function () {
        var u = new URL('http://h/');
        u.username = 'a b:c@';
        u.password = 'p:w';
        assert.equal(u.href, 'http://a%20b%3Ac%40:p%3Aw@h/');
        u.username = '';
        u.password = '';
        assert.equal(u.href, 'http://h/');
        u = new URL('file:///x');
        u.username = 'x';
        assert.equal(u.href, 'file:///x', 'file URLs cannot have credentials');
});

test('setters: host and hostname', function () {
        var u = new URL('http://u:p@h.com:81/a?q#f');
        u.host = 'X.COM:8080';
        assert.equal(u.href, 'http://u:p@x.com:8080/a?q#f');
        u.host = 'y.com:abc';
        assert.equal(u.href, 'http://u:p@y.com:8080/a?q#f', 'host set, invalid port ignored');
        u.hostname = 'z.com:90';
        assert.equal(u.href, 'http://u:p@y.com:8080/a?q#f', 'hostname with port is refused');
        u.hostname = '0x7f.1';
        assert.equal(u.host, '127.0.0.1:8080');
        u.host = '';
        assert.equal(u.host, '127.0.0.1:8080', 'special URL cannot get an empty host');
        u = new URL('mailto:a@b');
        u.host = 'x';
        assert.equal(u.href, 'mailto:a@b', 'opaque path: no host');
});

test('setters: port', function () {
        var u = new URL('http://h:81/');
        u.port = '8080abc';
        assert.equal(u.port, '8080');
        u.port = 'abc';
        assert.equal(u.port, '8080');
        u.port = '99999';
        assert.equal(u.port, '8080');
        u.port = '80';
        assert.equal(u.port, '');
        assert.equal(u.href, 'http://h/');
        u.port = 1234;
        assert.equal(u.host, 'h:1234');
        u.port = '';
        assert.equal(u.host, 'h');
});

test('setters: pathname', function () {
        var u = new URL('http://h/x?q#f');
        u.pathname = 'a b/../c?d#e';
        assert.equal(u.href, 'http://h/c%3Fd%23e?q#f');
        u.pathname = '\\a\\b';
        assert.equal(u.pathname, '/a/b');
        u = new URL('mailto:a@b');
        u.pathname = 'x';
        assert.equal(u.href, 'mailto:a@b');
});

test('setters: search and hash', function () {
        var u = new URL('http://h/p');
        u.search = 'a=1 2#x';
        assert.equal(u.href, 'http://h/p?a=1%202%23x');
        u.search = '?';
        assert.equal(u.href, 'http://h/p?');
        assert.equal(u.search, '');
        u.hash = 'a b<>`"';
        assert.equal(u.hash, '#a%20b%3C%3E%60%22');
        u.hash = '';
        u.search = '';
        assert.equal(u.href, 'http://h/p');
        u = new URL('data:text/plain,a  #x');
        u.hash = '';
        assert.equal(u.href, 'data:text/plain,a', 'trailing spaces of an opaque path are stripped (Node 20)');
});

test('setters: href', function () {
        var u = new URL('http://a/?x=1');
        var sp = u.searchParams;
        u.href = 'https://b/?y=2';
        assert.equal(u.host, 'b');
        assert.equal(sp.get('y'), '2');
        assert.equal(sp.get('x'), null);
        assert.throws(function () { u.href = 'bad'; }, TypeError);
        assert.equal(u.href, 'https://b/?y=2');
});

test('searchParams is live in both directions', function () {
        var u = new URL('http://h/?a=1#f');
        var sp = u.searchParams;
        assert.equal(u.searchParams, sp, 'same object');
        sp.append('b', 'x y');
        assert.equal(u.href, 'http://h/?a=1&b=x+y#f');
        u.search = '?z=%20';
        assert.equal(sp.get('z'), ' ');
        assert.equal(sp.has('a'), false);
        sp.delete('z');
        assert.equal(u.href, 'http://h/#f', 'empty list removes the query');
});

test('origin', function () {
        assert.equal(new URL('https://a.com:443/x').origin, 'https://a.com');
        assert.equal(new URL('http://a.com:8080/x').origin, 'http://a.com:8080');
        assert.equal(new URL('file:///x').origin, 'null');
        assert.equal(new URL('blob:https://a.com:8443/uuid').origin, 'https://a.com:8443');
        assert.equal(new URL('blob:ftp://a.com/uuid').origin, 'null');
        assert.equal(new URL('custom://h/').origin, 'null');
});

test('URL has web-like shape', function () {
        assert.equal(Object.prototype.toString.call(new URL('http://h')), '[object URL]');
        assert.equal(URL.length, 1);
        assert.ok(Object.keys(URL.prototype).indexOf('href') >= 0, 'accessors are enumerable');
        assert.throws(function () { return Object.getOwnPropertyDescriptor(URL.prototype, 'href').get.call({}); }, TypeError);
});
