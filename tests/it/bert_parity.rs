#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The burn BERT encoder against reference outputs of the same weights
//! (`../shared/fixtures/bert-reference.json`, a float64 forward pass): token
//! ids equal; hidden states and pooled embeddings within 1e-4. Runs when the
//! models (`scripts/fetch-models.sh`) and the fixtures are present.

use crate::common;

use burn::tensor::Device;
use citewise::neural::bert::{mean_pool_normalized, Bert, BertConfig};
use citewise::neural::models::models_dir;
use citewise::neural::tokenizer::{batch, BertTokenizer};
use serde_json::Value;

fn close(got: &[f32], want: &Value, what: &str) {
    let want: Vec<f64> = want.as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(got.len() >= want.len(), "{what}: {} values, want {}", got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((*g as f64 - w).abs() < 1e-4, "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn all_three_models_match_the_reference() {
    let Some(shared) = common::shared_or_fail("BERT parity") else { return };
    let fixtures: Value = serde_json::from_str(&std::fs::read_to_string(shared.join("fixtures/bert-reference.json")).unwrap()).unwrap();
    let dir = models_dir().unwrap();
    if !dir.join("all-minilm-l6-v2/model.safetensors").exists() {
        panic!("models missing in {}: run scripts/fetch-models.sh", dir.display());
    }
    let device = Device::flex();
    for (name, fx) in fixtures.as_object().unwrap() {
        let mdir = dir.join(name);
        let config = BertConfig::from_file(&mdir.join("config.json")).unwrap();
        let model = Bert::load(&config, &mdir.join("model.safetensors"), &device).unwrap();
        let tok = BertTokenizer::from_file(&mdir.join("tokenizer.json"), 512).unwrap();
        let inputs = fx["inputs"].as_array().unwrap();
        let mut encoded = Vec::new();
        for inp in inputs {
            let e = tok.encode(inp["text"].as_str().unwrap(), inp["pair"].as_str()).unwrap();
            let ids: Vec<u32> = inp["ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
            let types: Vec<u32> = inp["type_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
            assert_eq!(e.ids, ids, "{name}: ids of {:?}", inp["text"]);
            assert_eq!(e.type_ids, types, "{name}: type ids");
            encoded.push(e);
        }
        // All inputs in one padded batch: padding must not change anything.
        let input = batch(&encoded, &device);
        let mask = input.mask.clone();
        let hidden = model.forward(input);
        let [_, _, h] = hidden.dims();
        let pooled = mean_pool_normalized(hidden.clone(), mask);
        let hidden: Vec<f32> = hidden.into_data().try_to_vec::<f32>().unwrap();
        let pooled: Vec<f32> = pooled.into_data().try_to_vec::<f32>().unwrap();
        let l = encoded.iter().map(|e| e.ids.len()).max().unwrap();
        for (i, inp) in inputs.iter().enumerate() {
            let row = |t: usize| &hidden[(i * l + t) * h..(i * l + t) * h + h];
            close(row(0), &inp["cls_hidden_8"], &format!("{name} input {i} [CLS]"));
            close(row(encoded[i].ids.len() - 1), &inp["last_hidden_8"], &format!("{name} input {i} last token"));
            let p = &pooled[i * h..(i + 1) * h];
            close(p, &inp["mean_pooled_normalized_16"], &format!("{name} input {i} pooled"));
            let cos: Vec<f32> = (0..inputs.len()).map(|j| p.iter().zip(&pooled[j * h..(j + 1) * h]).map(|(a, b)| a * b).sum()).collect();
            close(&cos, &inp["cosine_with_inputs"], &format!("{name} input {i} cosines"));
        }
    }
}

#[test]
fn mismatched_or_corrupt_weights_name_the_tensor_and_shapes() {
    let dir = models_dir().unwrap();
    let weights = dir.join("paraphrase-minilm-l3-v2/model.safetensors");
    if !weights.exists() {
        common::skip_unless_ci("the corrupt-weights test", "the models are not installed");
        return;
    }
    let device = Device::flex();
    let mut config = BertConfig::from_file(&dir.join("paraphrase-minilm-l3-v2/config.json")).unwrap();
    config.intermediate_size = 1000;
    let err = Bert::load(&config, &weights, &device).expect_err("shapes differ").to_string();
    assert!(err.contains("intermediate.dense") && err.contains("1536") && err.contains("1000"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let corrupt = tmp.path().join("model.safetensors");
    std::fs::write(&corrupt, b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}").unwrap();
    let config = BertConfig::from_file(&dir.join("paraphrase-minilm-l3-v2/config.json")).unwrap();
    let err = Bert::load(&config, &corrupt, &device).expect_err("corrupt file").to_string();
    assert!(err.contains("model.safetensors"), "{err}");
}

/// The wgpu code path, on whatever adapter wgpu finds (on CI a software
/// Vulkan driver): the same encoder gives the same vectors as on the CPU.
#[test]
fn wgpu_backend_matches_the_cpu_backend() {
    let dir = models_dir().unwrap();
    let m = dir.join("paraphrase-minilm-l3-v2");
    if !m.join("model.safetensors").exists() {
        common::skip_unless_ci("the wgpu test", "the models are not installed");
        return;
    }
    let has_vulkan =
        ["/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"].iter().any(|d| std::fs::read_dir(d).is_ok_and(|mut r| r.next().is_some()));
    if !has_vulkan {
        common::skip_unless_ci("the wgpu test", "no Vulkan driver installed (mesa-vulkan-drivers)");
        return;
    }
    let config = BertConfig::from_file(&m.join("config.json")).unwrap();
    let tok = BertTokenizer::from_file(&m.join("tokenizer.json"), 128).unwrap();
    let encoded = vec![
        tok.encode("Citation recommendation with evidence.", None).unwrap(),
        tok.encode("A longer second sentence pads the first one in the batch.", None).unwrap(),
    ];
    let run = |device: &Device| -> Vec<f32> {
        let model = Bert::load(&config, &m.join("model.safetensors"), device).unwrap();
        let input = batch(&encoded, device);
        let mask = input.mask.clone();
        mean_pool_normalized(model.forward(input), mask).into_data().try_to_vec::<f32>().unwrap()
    };
    let cpu = run(&Device::flex());
    let gpu = run(&Device::wgpu(burn::tensor::DeviceKind::DefaultDevice));
    assert_eq!(cpu.len(), gpu.len());
    for (i, (a, b)) in cpu.iter().zip(&gpu).enumerate() {
        assert!((a - b).abs() < 1e-3, "value {i}: cpu {a} vs wgpu {b}");
    }
}
