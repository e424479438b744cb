// The nested agent nested.js calls.
function main(input) { return { child: true, got: input.n * 2 }; }
