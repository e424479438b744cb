// A fetch to the local fake_http.py (--allow-host 127.0.0.1:PORT); input.url is its /text URL.
function main(input) {
  return fetch(input.url).then(function (r) { return r.text().then(function (t) { return { status: r.status, text: t }; }); });
}
