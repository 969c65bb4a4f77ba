#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! A real client: Neovim (headless, its built-in LSP client) attached to
//! `citewise lsp` completes inside `\cite{` and accepts the first item; the
//! buffer then holds the key and the bibliography on disk the entry.

mod common;

use std::process::Command;

fn nvim_available() -> bool {
    Command::new("nvim").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn neovim_completes_a_citation_and_the_entry_reaches_the_bibliography() {
    if !nvim_available() {
        common::skip_unless_ci("the Neovim client test", "Neovim is not installed (apt-get install neovim)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = common::fixture_library(dir.path(), env!("CARGO_BIN_EXE_citewise"));
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "key_style = \"authorYear\"\n").unwrap();
    let draft = dir.path().join("paper.tex");
    std::fs::write(&draft, "\\bibliography{refs}\nWe tag every word with a trigram hidden Markov model tagger \\cite{}.\n").unwrap();
    let out = dir.path().join("result.txt");
    // Neovim 0.7's API (Debian's package): start_client + buf_attach_client.
    let script = format!(
        r#"
local out = io.open([[{out}]], "w")
local function finish(msg) out:write(msg .. "\n"); out:close(); vim.cmd("qa!") end
vim.cmd("edit " .. [[{draft}]])
local client = vim.lsp.start_client({{
  name = "citewise",
  cmd = {{ [[{bin}]], "--library", [[{lib}]], "lsp", "--stages", "bm25,evidence", "--config", [[{config}]] }},
  root_dir = [[{root}]],
}})
if not client then return finish("no client") end
vim.lsp.buf_attach_client(0, client)
if not vim.wait(20000, function() local c = vim.lsp.get_client_by_id(client); return c and c.initialized end, 50) then
  return finish("not initialized")
end
-- The cursor inside \cite{{}}: line 2, after the brace.
local line = vim.api.nvim_buf_get_lines(0, 1, 2, false)[1]
local col = line:find("{{}}", 1, true)
vim.api.nvim_win_set_cursor(0, {{ 2, col }})
local params = vim.lsp.util.make_position_params()
local answers = vim.lsp.buf_request_sync(0, "textDocument/completion", params, 20000)
local result = answers and answers[client] and answers[client].result
if not result then return finish("no completion: " .. vim.inspect(answers)) end
local items = result.items or result
if #items == 0 then return finish("no items") end
local item = items[1]
-- Accept the first item: its edit, and its command when there is one.
if item.textEdit then
  vim.lsp.util.apply_text_edits({{ item.textEdit }}, 0, "utf-16")
else
  vim.api.nvim_put({{ item.insertText or item.label }}, "c", true, true)
end
if item.command then
  vim.lsp.buf_request_sync(0, "workspace/executeCommand", item.command, 20000)
end
vim.cmd("write")
local bib = [[{bib}]]
local ok = vim.wait(20000, function()
  local f = io.open(bib, "r"); if not f then return false end
  local text = f:read("*a"); f:close(); return text:find(item.label, 1, true) ~= nil
end, 100)
finish((ok and "ok " or "no entry ") .. item.label)
"#,
        out = out.display(),
        draft = draft.display(),
        bin = env!("CARGO_BIN_EXE_citewise"),
        lib = lib.display(),
        config = config.display(),
        root = dir.path().display(),
        bib = dir.path().join("refs.bib").display(),
    );
    let script_path = dir.path().join("test.lua");
    std::fs::write(&script_path, script).unwrap();
    let status = Command::new("timeout")
        .args(["120", "nvim", "--headless", "-n", "-u", "NONE", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", script_path.display()))
        .status()
        .unwrap();
    let result = std::fs::read_to_string(&out).unwrap_or_else(|_| panic!("Neovim wrote no result (exit {status})"));
    let key = result.trim().strip_prefix("ok ").unwrap_or_else(|| panic!("{result}"));
    let buffer = std::fs::read_to_string(&draft).unwrap();
    assert!(buffer.contains(&format!("\\cite{{{key}}}.")), "the key is in the saved buffer: {buffer}");
    let bib = std::fs::read_to_string(dir.path().join("refs.bib")).unwrap();
    assert!(bib.contains(&format!("{{{key},")) && bib.contains("Part-of-Speech"), "{bib}");
}
