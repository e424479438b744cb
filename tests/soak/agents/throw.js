// An agent that throws: exit 1, "agent error: Error: soak boom".
function main(input) { throw new Error("soak boom " + input.n); }
