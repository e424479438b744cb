// Hits the memory ceiling (--memory): exit 137, "memory limit exceeded".
function main() {
  const keep = [];
  for (let i = 0; ; i++) keep.push(new Array(100000).fill(i));
}
