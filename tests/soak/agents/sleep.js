// Waits on a timer far longer than any deadline given to it: --deadline ends it
// (exit 124), SIGKILL ends it at a random moment, a serve session is cancelled.
function main() { return new Promise(function (r) { setTimeout(function () { r("woke"); }, 30000); }); }
