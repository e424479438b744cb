// The agent the SDK examples serve: saves a note in its workspace (a gated
// call: under the supervised profile someone must approve it) and says so.
//   chidori serve sdk/examples/note.js --trusted --workspace DIR --listen 127.0.0.1:8080
// (--trusted: the server's own policy permits it; each session asks "supervised").
export default async (input) => {
  const text = String(input?.text ?? "hello");
  await chidori.workspace.write("note.txt", text);
  return { saved: "note.txt", bytes: text.length };
};
