//! The MoE layer's kernels as tensor functions: the router, the experts (on CUDA cores by slot or by expert, or
//! as grouped GEMMs on tensor cores), the dense SwiGLU MLP through the same kernels, and the combine with the
//! residual.

use candle_core::cuda_backend::cudarc::driver::{CudaFunction, DevicePtr};
use candle_core::{DType, Tensor};

use super::buffers::{address, optional_address};
use super::grouped_experts::{ExpertPlan, GroupedExperts};
use super::launch::{grid, Kernels, Weight, MAX_MOE_TOKENS, MAX_SLOTS_BY_SLOT, MOE_WARPS};
use super::mlp::Mlp;
use crate::error::{EngineError, Result};
use crate::lm::Sums;

/// Rows a column of the MoE kernels takes for the shared experts (moe_decode.cuh's MOE_GROUP).
const MOE_GROUP: usize = 8;
/// Rows up to which [`Sums::Fastest`] runs the shared experts inside the routed-expert launch: past them
/// their columns are the slowest of the launch (measured on the H100 at 8 rows, when they were one column).
const FUSED_SHARED_MAX_ROWS: usize = 4;
/// Rows past which [`Sums::Fastest`] runs the experts on tensor cores where the tiles take them, rather than by
/// slot (H100, session 17: a 4-page step 1.48 ms by slot, 1.38 on the batch-invariant path's tiles; 1 page
/// 0.95 against 1.15).
const FASTEST_TILES_PAST_ROWS: usize = 2;
/// Rows up to which the router also groups the slots by expert (moe_decode.cuh's route_experts), for routers
/// of at most ROUTER_PLAN_MAX_EXPERTS experts (a thread each): a decode step of a few pages, where a launch
/// saved counts. More slots go to moe_plan's own launch of 1,024 threads.
const ROUTER_PLAN_MAX_ROWS: usize = 8;
const ROUTER_PLAN_MAX_EXPERTS: usize = MOE_WARPS as usize * 32;
/// Threads of the element-per-thread kernels.
const ELEMENT_THREADS: u32 = 256;

/// The arguments of a gate/up kernel, in moe_decode.cuh's order: device addresses (0 for none) and sizes.
struct GateUpArgs {
    x: u64,
    w: u64,
    ids: u64,
    act: u64,
    slots: i32,
    top_k: i32,
    h: i32,
    inter: i32,
    shared_w: u64,
    shared_inter: i32,
    shared_act: u64,
    tokens: i32,
}

/// A MoE layer's router: gate (E, H) in f32 and how its top k are weighted.
pub struct Router<'a> {
    pub gate: &'a Tensor,
    pub top_k: usize,
    pub scaling: f64,
    pub norm_topk: bool,
}

/// A residual add and RMSNorm to apply before routing: RMSNorm(x + delta) with `weight`, `eps`.
pub struct AddNorm<'a> {
    pub delta: &'a Tensor,
    pub weight: &'a Tensor,
    pub eps: f64,
}

/// The chosen experts (B, k) and their weights; with an [`AddNorm`], also x + delta and its RMSNorm; for a
/// decode step's rows, also the slots grouped by expert for the grouped GEMMs.
pub struct Routed {
    pub ids: Tensor,
    pub weights: Tensor,
    pub sum: Option<Tensor>,
    pub normed: Option<Tensor>,
    pub plan: Option<ExpertPlan>,
}

impl Routed {
    /// Experts chosen elsewhere: `ids` (B, k) u32 and their `weights` (B, k) f32.
    pub fn chosen(ids: Tensor, weights: Tensor) -> Self {
        Self {
            ids,
            weights,
            sum: None,
            normed: None,
            plan: None,
        }
    }
}

impl Kernels {
    /// Router softmax and top-k of each row of `x` (B, H) against `router.gate` (E, H) in f32: the chosen
    /// experts (B, k) in index order (u32) and their weights (B, k) in f32. With `norm`, the rows routed are
    /// RMSNorm(x + delta), returned with the sum. A decode step's few rows in bf16 also get their slots
    /// grouped by expert, which the grouped GEMMs take (see ROUTER_PLAN_MAX_ROWS).
    pub fn route_experts(
        &self,
        x: &Tensor,
        norm: Option<AddNorm<'_>>,
        router: &Router<'_>,
    ) -> Result<Routed> {
        let (b, h) = x.dims2()?;
        let e = router.gate.dim(0)?;
        if b > MAX_MOE_TOKENS {
            return Err(too_many_tokens(b));
        }
        let logits = self.empty((b, e), DType::F32)?;
        let ids = self.empty((b, router.top_k), DType::U32)?;
        let weights = self.empty((b, router.top_k), DType::F32)?;
        let normed = norm
            .as_ref()
            .map(|_| self.empty((b, h), self.dtype))
            .transpose()?;
        let sum = norm
            .as_ref()
            .map(|_| self.empty((b, h), self.dtype))
            .transpose()?;
        let (delta_p, norm_w_p) = (
            optional_address(norm.as_ref().map(|n| n.delta))?,
            optional_address(norm.as_ref().map(|n| n.weight))?,
        );
        let (sum_p, normed_p) = (
            optional_address(sum.as_ref())?,
            optional_address(normed.as_ref())?,
        );
        let eps = norm.as_ref().map_or(0.0, |n| n.eps as f32);
        let (x_p, g_p, l_p, ids_p, w_p) = (
            address(x)?,
            address(router.gate)?,
            address(&logits)?,
            address(&ids)?,
            address(&weights)?,
        );
        // The grouped GEMMs that take the plan take bf16 activations only.
        let plan = (b <= ROUTER_PLAN_MAX_ROWS
            && e <= ROUTER_PLAN_MAX_EXPERTS
            && self.dtype == DType::BF16)
            .then(|| ExpertPlan::new(&self.dev, b * router.top_k, e))
            .transpose()?;
        let (off_p, ord_p) = match &plan {
            Some(p) => (address(&p.offsets)?, address(&p.order)?),
            None => (0, 0),
        };
        let done_p = self.route_done.device_ptr(&self.stream).0;
        let rows_done_p = self.route_rows_done.device_ptr(&self.stream).0;
        let (h_i, e_i, k_i) = (h as i32, e as i32, router.top_k as i32);
        let (scale_f, norm_i) = (router.scaling as f32, i32::from(router.norm_topk));
        let mut launch = self.prepare(&self.route_experts);
        launch
            .arg(&x_p)
            .arg(&delta_p)
            .arg(&norm_w_p)
            .arg(&eps)
            .arg(&sum_p)
            .arg(&normed_p)
            .arg(&g_p)
            .arg(&l_p)
            .arg(&done_p)
            .arg(&ids_p)
            .arg(&w_p)
            .arg(&h_i)
            .arg(&e_i)
            .arg(&k_i)
            .arg(&scale_f)
            .arg(&norm_i)
            .arg(&rows_done_p)
            .arg(&off_p)
            .arg(&ord_p);
        let columns = (e as u32).div_ceil(MOE_WARPS);
        let row_cache = (h * std::mem::size_of::<f32>()) as u32;
        self.run(
            launch,
            grid(b as u32, columns, 1),
            MOE_WARPS * 32,
            row_cache,
        )?;
        Ok(Routed {
            ids,
            weights,
            sum,
            normed,
            plan,
        })
    }

    /// The routed experts of the rows of `x`, reading each chosen expert's rows once, and the shared experts on
    /// every row when given. Returns y (B·k, H) in f32, already weighted, and the shared experts' output (B, H)
    /// in f32 (values of the activation dtype).
    ///
    /// [`Sums::Fastest`]: up to MAX_SLOTS_BY_SLOT slots on the tensor-core tiles, the shared experts in the
    /// same launches, past a very few rows, else by slot (with the shared experts in the same launch for a few
    /// rows); past them on the grouped GEMMs (or by expert where they do not fit). Shared experts not run with
    /// the routed ones go through cuBLAS. [`Sums::BatchInvariant`]: routed and shared experts together on the
    /// expert tiles (expert_tiles.rs) for a step of a few rows, on the grouped GEMMs' decode kernels for more
    /// (both sum in one order), where they take the layer (bf16 activations); else on the CUDA-core kernels, by
    /// slot or, past MAX_SLOTS_BY_SLOT, by expert, with the shared experts in columns of their own. Each slot's
    /// sums run in the same order whatever the batch. `choice`: the experts the rows chose, and the router's plan
    /// if it made one.
    pub fn moe_experts(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        shared: Option<Mlp<'_>>,
        choice: &Routed,
        sums: Sums,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (ids, weights) = (&choice.ids, &choice.weights);
        let b = x.dim(0)?;
        if b > MAX_MOE_TOKENS {
            return Err(too_many_tokens(b));
        }
        let by_slot = b * ids.dim(1)? <= MAX_SLOTS_BY_SLOT;
        let (y, fused) = match sums {
            Sums::BatchInvariant => {
                if let Some(out) = self.experts_on_tiles(x, routed, shared, choice)? {
                    return Ok(out);
                }
                let grouped = self.with_shared_on_tensor_cores(x, routed, shared, choice, sums)?;
                if let Some(out) = grouped {
                    return Ok(out);
                }
                let columns = if by_slot {
                    Columns::BySlot
                } else {
                    Columns::ByExpert
                };
                return self.experts_in_columns(x, routed, shared, ids, weights, columns);
            }
            Sums::Fastest if by_slot => {
                if b > FASTEST_TILES_PAST_ROWS {
                    if let Some(out) =
                        self.with_shared_on_tensor_cores(x, routed, shared, choice, sums)?
                    {
                        return Ok(out);
                    }
                }
                let fused = shared.filter(|_| b <= FUSED_SHARED_MAX_ROWS);
                self.experts_in_columns(x, routed, fused, ids, weights, Columns::BySlot)?
            }
            Sums::Fastest => (self.experts_on_tensor_cores(x, routed, choice)?, None),
        };
        if fused.is_some() {
            return Ok((y, fused));
        }
        let shared = shared
            .map(|mlp| {
                let (gate_up, down) = mlp.dense(self.dtype)?;
                let act = self.silu_mul(&x.matmul(&gate_up.t()?)?)?;
                Ok::<_, EngineError>(act.matmul(&down.t()?)?.to_dtype(DType::F32)?)
            })
            .transpose()?;
        Ok((y, shared))
    }

    /// The routed and the shared experts together on the grouped GEMMs (a slot's sums do not depend on the
    /// slots in its tile; for [`Sums::BatchInvariant`], they are the expert tiles'), where the tiles take the
    /// layer. None where they do not: f32, or sizes that are not multiples of 64.
    fn with_shared_on_tensor_cores(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        shared: Option<Mlp<'_>>,
        choice: &Routed,
        sums: Sums,
    ) -> Result<Option<(Tensor, Option<Tensor>)>> {
        let shared_fits = match shared {
            Some(mlp) => GroupedExperts::takes_shared(mlp.inter()?),
            None => true,
        };
        let fits = shared_fits
            && GroupedExperts::supports(self.dtype, x.dim(1)?, routed.inter()?, routed.experts()?);
        if !fits {
            return Ok(None);
        }
        let chosen = (&choice.ids, &choice.weights);
        let out = self
            .grouped
            .forward(x, routed, shared, chosen, choice.plan.as_ref(), sums)?;
        Ok(Some(out))
    }

    /// Many slots: grouped GEMMs on tensor cores where their tiles fit (int8 experts read as int8), else a
    /// block column per expert.
    fn experts_on_tensor_cores(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        choice: &Routed,
    ) -> Result<Tensor> {
        let (ids, weights) = (&choice.ids, &choice.weights);
        if GroupedExperts::supports(self.dtype, x.dim(1)?, routed.inter()?, routed.experts()?) {
            let (y, _) = self.grouped.forward(
                x,
                routed,
                None,
                (ids, weights),
                choice.plan.as_ref(),
                Sums::Fastest,
            )?;
            return Ok(y);
        }
        let (y, _) = self.experts_in_columns(x, routed, None, ids, weights, Columns::ByExpert)?;
        Ok(y)
    }

    /// The routed experts in block columns, a column per slot (skipped unless it is its expert's first) or a
    /// column per expert, reading each chosen expert's rows once; then, when given, the shared experts in a
    /// column per MOE_GROUP rows. Two launches: gate/up with the activation, then down.
    fn experts_in_columns(
        &self,
        x: &Tensor,
        routed: Mlp<'_>,
        shared: Option<Mlp<'_>>,
        ids: &Tensor,
        weights: &Tensor,
        columns: Columns,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let (b, h) = x.dims2()?;
        if shared.is_some_and(|s| s.is_int8() != routed.is_int8()) {
            return Err(mixed_weights());
        }
        let (experts, inter) = (routed.experts()?, routed.inter()?);
        let top_k = ids.dim(1)?;
        let slots = b * top_k;
        let shared_inter = shared.map(|m| m.inter()).transpose()?.unwrap_or(0);
        let act = self.empty((slots, inter), self.dtype)?;
        let y = self.empty((slots, h), DType::F32)?;
        let shared_act = shared
            .map(|_| self.empty((b, shared_inter), self.dtype))
            .transpose()?;
        let shared_y = shared.map(|_| self.empty((b, h), DType::F32)).transpose()?;
        let (sgu_p, sd_p) = shared.map(|m| m.addresses()).transpose()?.unwrap_or((0, 0));
        let (sact_p, sy_p) = (
            optional_address(shared_act.as_ref())?,
            optional_address(shared_y.as_ref())?,
        );
        let (gu_p, d_p) = routed.addresses()?;
        let (x_p, ids_p, w_p) = (address(x)?, address(ids)?, address(weights)?);
        let (act_p, y_p) = (address(&act)?, address(&y)?);
        let (slots_i, k_i, h_i, i_i) = (slots as i32, top_k as i32, h as i32, inter as i32);
        let (si_i, b_i) = (shared_inter as i32, b as i32);
        let int8 = &self.int8;
        let (gate_up, down, routed_columns) = match (columns, routed.is_int8()) {
            (Columns::BySlot, false) => (&self.moe_gate_up_by_slot, &self.moe_down_by_slot, slots),
            (Columns::BySlot, true) => (&int8.moe_gate_up_by_slot, &int8.moe_down_by_slot, slots),
            (Columns::ByExpert, false) => (
                &self.moe_gate_up_by_expert,
                &self.moe_down_by_expert,
                experts,
            ),
            (Columns::ByExpert, true) => (
                &int8.moe_gate_up_by_expert,
                &int8.moe_down_by_expert,
                experts,
            ),
        };
        let shared_columns = if shared.is_some() {
            b.div_ceil(MOE_GROUP)
        } else {
            0
        };
        let columns = (routed_columns + shared_columns) as u32;
        let first = GateUpArgs {
            x: x_p,
            w: gu_p,
            ids: ids_p,
            act: act_p,
            slots: slots_i,
            top_k: k_i,
            h: h_i,
            inter: i_i,
            shared_w: sgu_p,
            shared_inter: si_i,
            shared_act: sact_p,
            tokens: b_i,
        };
        self.gate_up(gate_up, &first, columns)?;
        let mut second = self.prepare(down);
        second
            .arg(&act_p)
            .arg(&d_p)
            .arg(&ids_p)
            .arg(&w_p)
            .arg(&y_p)
            .arg(&slots_i)
            .arg(&h_i)
            .arg(&i_i)
            .arg(&sact_p)
            .arg(&sd_p)
            .arg(&si_i)
            .arg(&sy_p)
            .arg(&b_i);
        let blocks = grid((h as u32).div_ceil(MOE_WARPS), columns, 1);
        self.run(second, blocks, MOE_WARPS * 32, 0)?;
        Ok((y, shared_y))
    }

    /// The activation T(silu(x·gateᵀ)) · T(x·upᵀ) (B, I) of a dense SwiGLU MLP whose fused `gate_up` (2I, H)
    /// holds the gate rows then the up rows: the MoE kernel with the MLP as its shared expert and no routed
    /// ones, a row's activation summed as a routed expert's is; [`Sums::Fastest`] takes cuBLAS past a few rows
    /// (int8 weights dequantized first, past more: [`Kernels::prefers_cublas`]), [`Sums::BatchInvariant`] the
    /// linear tiles where they take the layer.
    pub fn swiglu(&self, x: &Tensor, gate_up: Weight<'_>, sums: Sums) -> Result<Tensor> {
        let (b, h) = x.dims2()?;
        let inter = gate_up.dims()?.0 / 2;
        if sums == Sums::BatchInvariant {
            if let Some(gate_up) = self.linear_tiles(x, None, gate_up)? {
                return self.silu_mul(&gate_up);
            }
        }
        if self.prefers_cublas(gate_up, b, sums) {
            let w = self.dense_weight(gate_up)?;
            return self.silu_mul(&x.matmul(&w.t()?)?);
        }
        let kernel = match gate_up {
            Weight::Dense(_) => &self.moe_gate_up_by_slot,
            Weight::Int8(_) => &self.int8.moe_gate_up_by_slot,
        };
        let act = self.empty((b, inter), self.dtype)?;
        let (gu_p, act_p, i_i) = (gate_up.address()?, address(&act)?, inter as i32);
        let args = GateUpArgs {
            x: address(x)?,
            w: gu_p,
            ids: 0,
            act: act_p,
            slots: 0,
            top_k: 1,
            h: h as i32,
            inter: i_i,
            shared_w: gu_p,
            shared_inter: i_i,
            shared_act: act_p,
            tokens: b as i32,
        };
        self.gate_up(kernel, &args, b.div_ceil(MOE_GROUP) as u32)?;
        Ok(act)
    }

    /// One launch of a gate/up kernel (moe_decode.cuh's `moe_gate_up_by_*`) over `columns` block columns, a warp
    /// per intermediate row of the wider of the routed and shared experts.
    fn gate_up(&self, kernel: &CudaFunction, a: &GateUpArgs, columns: u32) -> Result<()> {
        let mut launch = self.prepare(kernel);
        launch
            .arg(&a.x)
            .arg(&a.w)
            .arg(&a.ids)
            .arg(&a.act)
            .arg(&a.slots)
            .arg(&a.top_k)
            .arg(&a.h)
            .arg(&a.inter)
            .arg(&a.shared_w)
            .arg(&a.shared_inter)
            .arg(&a.shared_act)
            .arg(&a.tokens);
        let rows = a.inter.max(a.shared_inter) as u32;
        let blocks = grid(rows.div_ceil(MOE_WARPS), columns, 1);
        self.run(launch, blocks, MOE_WARPS * 32, 0)
    }

    /// Σ of each row's k expert outputs `y` (B·k, H), in expert order, + `shared` (B, H, f32): the MoE's output,
    /// added to the residual stream `x` when given.
    pub fn moe_combine(
        &self,
        y: &Tensor,
        shared: Option<&Tensor>,
        x: Option<&Tensor>,
        top_k: usize,
    ) -> Result<Tensor> {
        let (slots, h) = y.dims2()?;
        let b = slots / top_k;
        let out = self.empty((b, h), self.dtype)?;
        let (y_p, out_p) = (address(y)?, address(&out)?);
        let x_p = optional_address(x)?;
        let shared_p = optional_address(shared)?;
        let (k_i, h_i) = (top_k as i32, h as i32);
        let mut launch = self.prepare(&self.moe_combine);
        launch
            .arg(&y_p)
            .arg(&shared_p)
            .arg(&x_p)
            .arg(&out_p)
            .arg(&k_i)
            .arg(&h_i);
        let columns = (h as u32).div_ceil(ELEMENT_THREADS);
        self.run(launch, grid(columns, b as u32, 1), ELEMENT_THREADS, 0)?;
        Ok(out)
    }

    /// silu(gate) · up of a fused projection (B, 2I) → (B, I).
    pub fn silu_mul(&self, gate_up: &Tensor) -> Result<Tensor> {
        let (b, two_i) = gate_up.dims2()?;
        let inter = two_i / 2;
        let out = self.empty((b, inter), self.dtype)?;
        let (gu_p, out_p, i_i) = (address(gate_up)?, address(&out)?, inter as i32);
        let mut launch = self.prepare(&self.silu_mul);
        launch.arg(&gu_p).arg(&out_p).arg(&i_i);
        let columns = (inter as u32).div_ceil(ELEMENT_THREADS);
        self.run(launch, grid(columns, b as u32, 1), ELEMENT_THREADS, 0)?;
        Ok(out)
    }
}

/// How the MoE kernels give out their block columns: one per slot, or one per expert.
#[derive(Clone, Copy)]
enum Columns {
    BySlot,
    ByExpert,
}

/// The column kernels read one kind of weights a launch.
pub(super) fn mixed_weights() -> EngineError {
    EngineError::Input(
        "a MoE layer's routed and shared experts must both be int8, or neither".into(),
    )
}

fn too_many_tokens(tokens: usize) -> EngineError {
    EngineError::Input(format!(
        "{tokens} tokens through the MoE at once; the kernels take at most {MAX_MOE_TOKENS}"
    ))
}
