//! The routed mixture of experts with its shared expert (spec §1.5, §7.9): softmax routing in f32, plain top-k
//! without renormalisation (unless the config asks for it), scaled by `routed_scaling_factor`.

use candle_core::{DType, Module, Tensor};

use super::decoder::WeightPass;
use crate::config::TextConfig;
use crate::error::Result;
use crate::layers::mlp::SwiGlu;
use crate::quant::Int8Experts;
use crate::weights::Weights;

/// The routed experts.
#[derive(Debug, Clone)]
pub enum Experts {
    /// Stacked as gate_up (E, 2I, H) and down (E, H, I), in the model's dtype.
    Dense {
        gate_up: Tensor,
        down: Tensor,
    },
    Int8(Int8Experts),
}

/// Router weights, the routed experts and the shared ones.
#[derive(Debug, Clone)]
pub struct Moe {
    /// (E, H) in f32: the reference casts both the hidden state and the gate weight to f32.
    pub(super) gate: Tensor,
    pub(super) experts: Experts,
    pub(super) shared: Option<SwiGlu>,
    pub(super) top_k: usize,
    intermediate: usize,
    pub(super) scaling: f64,
    pub(super) norm_topk: bool,
}

/// The experts chosen for each token, with their weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing {
    /// `per_token[t]` = (expert, weight) pairs, `top_k` of them.
    pub per_token: Vec<Vec<(usize, f32)>>,
}

impl Moe {
    pub fn load(w: &Weights, prefix: &str, cfg: &TextConfig) -> Result<Self> {
        let (h, i, e) = (
            cfg.hidden_size,
            cfg.moe_intermediate_size,
            cfg.n_routed_experts,
        );
        let shared = if cfg.n_shared_experts > 0 {
            Some(SwiGlu::load(
                w,
                &format!("{prefix}.shared_experts"),
                h,
                i * cfg.n_shared_experts,
            )?)
        } else {
            None
        };
        Ok(Self {
            gate: w.get_as(&format!("{prefix}.gate.weight"), &[e, h], DType::F32)?,
            experts: Experts::Dense {
                gate_up: w.get(&format!("{prefix}.experts.gate_up_proj"), &[e, 2 * i, h])?,
                down: w.get(&format!("{prefix}.experts.down_proj"), &[e, h, i])?,
            },
            shared,
            top_k: cfg.num_experts_per_tok,
            intermediate: i,
            scaling: cfg.routed_scaling_factor,
            norm_topk: cfg.norm_topk_prob,
        })
    }

    /// The routed experts and the shared ones replaced by what `pass` makes of them, named `{name}.experts`
    /// and `{name}.shared`.
    pub(super) fn map_weights(&mut self, name: &str, pass: &mut dyn WeightPass) -> Result<()> {
        self.experts = pass.experts(&format!("{name}.experts"), &self.experts)?;
        if let Some(shared) = &mut self.shared {
            shared.map_projections(&format!("{name}.shared"), &mut |n, p| pass.projection(n, p))?;
        }
        Ok(())
    }

    /// Softmax over the router logits in f32 and the top-k experts of each token (ties go to the lower index).
    pub fn route_experts(&self, x: &Tensor) -> Result<Routing> {
        let logits = x.to_dtype(DType::F32)?.matmul(&self.gate.t()?)?;
        let probs = candle_nn::ops::softmax_last_dim(&logits)?.to_vec2::<f32>()?;
        let per_token = probs
            .iter()
            .map(|p| {
                let mut order: Vec<usize> = (0..p.len()).collect();
                order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
                order.truncate(self.top_k);
                let sum: f32 = order.iter().map(|&e| p[e]).sum();
                order
                    .into_iter()
                    .map(|e| {
                        let w = if self.norm_topk { p[e] / sum } else { p[e] };
                        (e, (w as f64 * self.scaling) as f32)
                    })
                    .collect()
            })
            .collect();
        Ok(Routing { per_token })
    }

    /// `x`: (n, H) → (n, H): Σ_k w_k · expert_k(x) + shared(x).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut out = self.each_expert(x)?.to_dtype(x.dtype())?;
        if let Some(shared) = &self.shared {
            out = (out + shared.forward(x)?)?;
        }
        Ok(out)
    }

    /// The routed experts' sum (n, H) in f32, routed on the host and run expert by expert, as the reference
    /// does.
    fn each_expert(&self, x: &Tensor) -> Result<Tensor> {
        let (n, h) = x.dims2()?;
        let routing = self.route_experts(x)?;
        let n_experts = self.gate.dim(0)?;
        // Tokens and weights per expert, visited in expert order as the reference does.
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n_experts];
        let mut weights: Vec<Vec<f32>> = vec![Vec::new(); n_experts];
        for (t, chosen) in routing.per_token.iter().enumerate() {
            for &(e, w) in chosen {
                rows[e].push(t as u32);
                weights[e].push(w);
            }
        }
        // Partial sums accumulate in f32 (the official `moe_infer`), whatever the activation dtype.
        let mut out = Tensor::zeros((n, h), DType::F32, x.device())?;
        for e in 0..n_experts {
            if rows[e].is_empty() {
                continue;
            }
            let idx = Tensor::new(rows[e].as_slice(), x.device())?;
            let xs = x.index_select(&idx, 0)?;
            let y = self.expert(e, &xs)?.to_dtype(DType::F32)?;
            let w = Tensor::new(weights[e].as_slice(), x.device())?.unsqueeze(1)?;
            out = out.index_add(&idx, &y.broadcast_mul(&w)?, 0)?;
        }
        Ok(out)
    }

    /// One routed expert's SwiGLU on its tokens: gate and up are the two halves of the stacked rows.
    fn expert(&self, e: usize, xs: &Tensor) -> Result<Tensor> {
        let (gate_up, down) = match &self.experts {
            Experts::Dense { gate_up, down } => (gate_up, down),
            Experts::Int8(q) => return q.expert(e, xs, self.intermediate),
        };
        let gate_up = xs.matmul(&gate_up.get(e)?.t()?)?;
        let gate = gate_up.narrow(1, 0, self.intermediate)?;
        let up = gate_up.narrow(1, self.intermediate, self.intermediate)?;
        let act = (candle_nn::ops::silu(&gate)? * up)?;
        Ok(act.matmul(&down.get(e)?.t()?)?)
    }
}
