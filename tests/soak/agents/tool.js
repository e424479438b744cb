// A tool from --tools tools.json (boxed by default).
function main(input) {
  return chidori.tool("upper", { text: "soak " + input.n }).then(function (r) { return { tool: r }; });
}
