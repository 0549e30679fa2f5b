// Reads {"ids": [numbers], "text": [strings]} on standard input, the IDs as
// JSON numbers and their decimal text, and writes
// {"checked": n, "bad": [...]}: every ID that JSON.parse did not read as a
// safe integer equal to its text.
'use strict';
const fs = require('fs');

const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const bad = [];
input.ids.forEach((n, i) => {
  const text = input.text[i];
  if (!Number.isSafeInteger(n) || String(n) !== text || String(Number(text)) !== text) {
    bad.push({ text, read: String(n), safe: Number.isSafeInteger(n) });
  }
});
process.stdout.write(JSON.stringify({ checked: input.ids.length, bad }));
