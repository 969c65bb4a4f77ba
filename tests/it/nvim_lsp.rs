#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! A real client: Neovim (headless, its built-in LSP client) attached to
//! `citewise lsp` completes inside `\cite{` and accepts the first item; the
//! buffer then holds the key and the bibliography on disk the entry.

use crate::common;

use std::process::Command;

fn nvim_available() -> bool {
    Command::new("nvim").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Runs a Lua script in headless Neovim (no user config, at most 120 s)
/// and returns what it wrote to `out`.
fn run_neovim(path: &std::path::Path, script: &str, out: &std::path::Path) -> String {
    std::fs::write(path, script).unwrap();
    let status = Command::new("timeout")
        .args(["120", "nvim", "--headless", "-n", "-u", "NONE", "-i", "NONE", "-c"])
        .arg(format!("luafile {}", path.display()))
        .status()
        .unwrap();
    std::fs::read_to_string(out).unwrap_or_else(|_| panic!("Neovim wrote no result (exit {status})"))
}

#[test]
fn neovim_completes_a_citation_and_the_entry_reaches_the_bibliography() {
    if !nvim_available() {
        common::skip_unless_ci("the Neovim client test", "Neovim is not installed (apt-get install neovim)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = common::fixture_library(dir.path());
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
    let result = run_neovim(&dir.path().join("test.lua"), &script, &out);
    let key = result.trim().strip_prefix("ok ").unwrap_or_else(|| panic!("{result}"));
    let buffer = std::fs::read_to_string(&draft).unwrap();
    assert!(buffer.contains(&format!("\\cite{{{key}}}.")), "the key is in the saved buffer: {buffer}");
    let bib = std::fs::read_to_string(dir.path().join("refs.bib")).unwrap();
    assert!(bib.contains(&format!("{{{key},")) && bib.contains("Part-of-Speech"), "{bib}");
}

#[test]
fn neovim_shows_check_diagnostics_and_applies_their_fixes() {
    if !nvim_available() {
        common::skip_unless_ci("the Neovim client test", "Neovim is not installed (apt-get install neovim)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = common::fixture_library(dir.path());
    let draft = dir.path().join("paper.tex");
    std::fs::write(
        &draft,
        "\\bibliography{refs}\n\
         We tag every word with a trigram hidden Markov model tagger \\cite{brants200tnt}.\n\
         Transformers are pre-trained on unlabelled text in both directions \\cite{devlin2019}.\n",
    )
    .unwrap();
    // The DOI is BERT's; the title is another paper's.
    let bib = dir.path().join("refs.bib");
    std::fs::write(
        &bib,
        "@inproceedings{devlin2019,\n  title = {Deep Residual Learning for Image Recognition},\n  author = {Devlin, Jacob},\n  year = {2019},\n  doi = {10.18653/v1/N19-1423}\n}\n",
    )
    .unwrap();
    let out = dir.path().join("result.txt");
    let script = format!(
        r#"
local out = io.open([[{out}]], "w")
local function finish(msg) out:write(msg .. "\n"); out:close(); vim.cmd("qa!") end
vim.cmd("edit " .. [[{draft}]])
local client = vim.lsp.start_client({{
  name = "citewise",
  cmd = {{ [[{bin}]], "--library", [[{lib}]], "lsp", "--stages", "bm25,evidence" }},
  root_dir = [[{root}]],
}})
if not client then return finish("no client") end
vim.lsp.buf_attach_client(0, client)
local function diagnostics() return vim.diagnostic.get(0) end
if not vim.wait(20000, function() return #diagnostics() >= 2 end, 50) then
  return finish("no diagnostics: " .. vim.inspect(diagnostics()))
end
for _, d in ipairs(diagnostics()) do
  out:write("diagnostic " .. d.lnum .. " " .. d.severity .. " " .. d.message:gsub("\n", " | ") .. "\n")
end
-- The first quick fix of each citation, applied.
local uri = vim.uri_from_bufnr(0)
for _, line in ipairs({{ 1, 2 }}) do
  local text = vim.api.nvim_buf_get_lines(0, line, line + 1, false)[1]
  local col = text:find("\\cite{{", 1, true) + 6
  local params = {{
    textDocument = {{ uri = uri }},
    range = {{ start = {{ line = line, character = col }}, ["end"] = {{ line = line, character = col }} }},
    context = {{ diagnostics = {{}} }},
  }}
  local answers = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 20000)
  local actions = answers and answers[client] and answers[client].result
  if not actions or #actions == 0 then return finish("no actions on line " .. line .. ": " .. vim.inspect(answers)) end
  out:write("action " .. line .. " " .. actions[1].title .. "\n")
  vim.lsp.util.apply_workspace_edit(actions[1].edit, "utf-16")
end
vim.cmd("wa")
finish("ok")
"#,
        out = out.display(),
        draft = draft.display(),
        bin = env!("CARGO_BIN_EXE_citewise"),
        lib = lib.display(),
        root = dir.path().display(),
    );
    let result = run_neovim(&dir.path().join("check.lua"), &script, &out);
    assert!(result.trim_end().ends_with("ok"), "{result}");
    // Severity 2: a warning; 1: an error.
    assert!(result.contains("diagnostic 1 2 `brants200tnt` is in neither"), "{result}");
    assert!(result.contains("→ brants2000tnt (near miss)"), "the record check offers near misses at once: {result}");
    assert!(result.contains("diagnostic 2 1 `devlin2019`: its DOI 10.18653/v1/n19-1423 is “BERT: Pre-training"), "{result}");
    assert!(result.contains("action 1 Replace brants200tnt with brants2000tnt (near miss)"), "{result}");
    assert!(result.contains("action 2 Fix the title of devlin2019 in refs.bib from the library"), "{result}");
    let buffer = std::fs::read_to_string(&draft).unwrap();
    assert!(buffer.contains("\\cite{brants2000tnt}."), "{buffer}");
    let bib = std::fs::read_to_string(&bib).unwrap();
    assert!(bib.contains("title = {BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding}"), "{bib}");
    assert!(bib.contains("doi = {10.18653/v1/N19-1423}"), "the rest of the entry as it was: {bib}");
}
