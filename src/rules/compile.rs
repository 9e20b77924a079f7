//! What the compiler made of a kernel, read from its dumps: Tile IR operation counts by kind (from a
//! `CUDA_TILE_DUMP_TILEIR` file), registers and spills per function (`cuobjdump --dump-resource-usage`)
//! and the SASS instruction mix (`cuobjdump -sass` or `nvdisasm`). Pure: the texts come from the
//! tools `diagnose::toolchain` runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Tile IR operations by kind. View loads and stores move whole tiles through a tensor view (the
/// path the compiler can map to TMA); pointer loads and stores take a tile of pointers (gather and
/// scatter).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileOps {
    pub view_loads: u32,
    pub view_stores: u32,
    pub gathers: u32,
    pub scatters: u32,
    pub mma: u32,
    pub reductions: u32,
}

/// Counts the operations of one Tile IR text (MLIR, pretty `dialect.op` or generic `"dialect.op"`).
pub fn tile_ops(ir: &str) -> TileOps {
    let mut ops = TileOps::default();
    for line in ir.lines() {
        let Some(op) = operation(line) else { continue };
        let slot = match op {
            "load_view_tko" => &mut ops.view_loads,
            "store_view_tko" => &mut ops.view_stores,
            "load_ptr_tko" => &mut ops.gathers,
            "store_ptr_tko" => &mut ops.scatters,
            "mmaf" | "mmai" => &mut ops.mma,
            "reduce" | "scan" => &mut ops.reductions,
            _ => continue,
        };
        *slot += 1;
    }
    ops
}

/// The operation a line of MLIR applies: the first word after the results (`%a, %b = `), quotes
/// and dialect prefix removed.
fn operation(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let rest = match line.split_once(" = ") {
        Some((results, rest)) if results.starts_with('%') => rest,
        _ => line,
    };
    let word = rest.split(|c: char| c.is_whitespace() || c == '(').next()?;
    let word = word.trim_matches('"');
    Some(word.rsplit('.').next().unwrap_or(word))
}

/// Registers and per-thread memory of one compiled function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub function: String,
    pub registers: u32,
    /// Bytes of local memory per thread: where spilled registers go.
    pub local_bytes: u32,
    pub stack_bytes: u32,
    pub shared_bytes: u32,
}

/// Reads `cuobjdump --dump-resource-usage`: a `Function NAME:` line, then `REG:n STACK:n SHARED:n
/// LOCAL:n ...` for it.
pub fn resources(text: &str) -> Vec<Resources> {
    let mut out = Vec::new();
    let mut function: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("Function ") {
            function = Some(name.trim_end_matches(':').trim().to_string());
            continue;
        }
        let Some(name) = function.as_ref() else {
            continue;
        };
        let fields: BTreeMap<&str, u32> = line
            .split_whitespace()
            .filter_map(|f| {
                let (key, value) = f.split_once(':')?;
                Some((key, value.parse().ok()?))
            })
            .collect();
        if let Some(&registers) = fields.get("REG") {
            let field = |key| fields.get(key).copied().unwrap_or(0);
            out.push(Resources {
                function: name.clone(),
                registers,
                local_bytes: field("LOCAL"),
                stack_bytes: field("STACK"),
                shared_bytes: field("SHARED"),
            });
            function = None;
        }
    }
    out
}

/// The SASS of one function: instruction counts by kind and by opcode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SassMix {
    pub function: String,
    pub instructions: u32,
    pub tma_loads: u32,
    pub tma_stores: u32,
    pub global_loads: u32,
    pub global_stores: u32,
    pub mma: u32,
    /// Local-memory loads and stores (spills).
    pub local: u32,
    pub barriers: u32,
    /// Every opcode (without modifiers) and its count.
    pub opcodes: BTreeMap<String, u32>,
}

/// Reads `cuobjdump -sass` / `nvdisasm` text: `Function : NAME` (or a `.text.NAME:` section label)
/// starts a function; each `/*addr*/ [@P] OPCODE.MODIFIERS operands ;` line is one instruction.
pub fn sass_mix(text: &str) -> Vec<SassMix> {
    let mut out: Vec<SassMix> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("Function : ").or_else(|| {
            line.strip_prefix(".text.")
                .and_then(|l| l.strip_suffix(':'))
        }) {
            out.push(SassMix {
                function: name.trim().to_string(),
                ..SassMix::default()
            });
            continue;
        }
        let (Some(mix), Some(opcode)) = (out.last_mut(), instruction(line)) else {
            continue;
        };
        mix.instructions += 1;
        let base = opcode.split('.').next().unwrap_or(opcode);
        *mix.opcodes.entry(base.to_string()).or_default() += 1;
        let kind = match base {
            "UTMALDG" => Some(&mut mix.tma_loads),
            "UTMASTG" => Some(&mut mix.tma_stores),
            "LDG" => Some(&mut mix.global_loads),
            "STG" => Some(&mut mix.global_stores),
            "HMMA" | "HGMMA" | "IMMA" | "IGMMA" | "QGMMA" | "UTCHMMA" | "UTCQMMA" | "UTCIMMA" => {
                Some(&mut mix.mma)
            }
            "LDL" | "STL" => Some(&mut mix.local),
            "BAR" | "SYNCS" => Some(&mut mix.barriers),
            _ => None,
        };
        if let Some(count) = kind {
            *count += 1;
        }
    }
    out
}

/// The opcode of a disassembly line `/*0080*/  @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;`.
fn instruction(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("/*")?;
    let (address, rest) = rest.split_once("*/")?;
    if !address.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let first = words.next()?;
    let opcode = if first.starts_with('@') {
        words.next()?
    } else {
        first
    };
    let opcode = opcode.trim_end_matches(';');
    opcode
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        .then_some(opcode)
}

/// One kernel module as cuda-tile compiled it, for telling a recompile of the same code from a change:
/// the git blob id of its dumped Tile IR, less its source locations (`loc(...)`: a comment that moves
/// the code down a line compiles to the same kernel) and with the tree the run ran in replaced by
/// `<tree>` (the baseline's code runs from another directory), and the kernels it defines (`entry @NAME`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CompiledKernel {
    pub blob: String,
    pub entries: Vec<String>,
}

impl CompiledKernel {
    /// The Tile IR text `ir`, dumped by a run from the tree at `root`.
    pub fn of(ir: &str, root: &str) -> CompiledKernel {
        let text = without_locations(ir);
        let text = match root.is_empty() {
            true => text,
            false => text.replace(root, "<tree>"),
        };
        let blob = gix::objs::compute_hash(
            gix::hash::Kind::Sha1,
            gix::objs::Kind::Blob,
            text.as_bytes(),
        )
        .map_or_else(|e| format!("unhashed: {e}"), |id| id.to_string());
        let entries = text
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("entry @"))
            .filter_map(|rest| rest.split(|c: char| c == '(' || c.is_whitespace()).next())
            .map(str::to_string)
            .collect();
        CompiledKernel { blob, entries }
    }
}

/// Whether `entry`, the name of a compiled kernel, was compiled from the Python function `function`:
/// cuda-tile names each signature it compiles `{function}_K{calling convention}_{a part per parameter}`
/// (`scale_Kt1_A1f16_1l0_I128`); the bare name is a dump without the signature. Any other name that
/// starts with `function` is another function's.
pub fn compiled_from(entry: &str, function: &str) -> bool {
    entry
        .strip_prefix(function)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("_K"))
}

/// The function among `functions` that `entry` was compiled from; the longest where two fit (`f_K2`
/// and `f` both fit `f_K2_Kt1_...`).
pub fn function_of<'a>(entry: &str, functions: &[&'a str]) -> Option<&'a str> {
    functions
        .iter()
        .copied()
        .filter(|function| compiled_from(entry, function))
        .max_by_key(|function| function.len())
}

/// `text` less every MLIR location `loc(...)` (nested parentheses and quoted strings included).
fn without_locations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("loc(") {
        let starts_a_word = !rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        if !starts_a_word {
            out.push_str("loc(");
            rest = &rest[at + 4..];
            continue;
        }
        let (mut depth, mut quoted, mut escaped) = (0u32, false, false);
        let mut end = rest.len();
        for (i, c) in rest[at..].char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if quoted => escaped = true,
                '"' => quoted = !quoted,
                '(' if !quoted => depth += 1,
                ')' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Everything known about one iteration's compiled kernels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileFacts {
    /// Tile IR counts per dumped kernel file.
    pub tile_ir: BTreeMap<String, TileOps>,
    pub resources: Vec<Resources>,
    pub sass: Vec<SassMix>,
}

impl CompileFacts {
    pub fn is_empty(&self) -> bool {
        self.tile_ir.is_empty() && self.resources.is_empty() && self.sass.is_empty()
    }

    /// Named totals over every kernel, for comparing two iterations.
    pub fn totals(&self) -> BTreeMap<&'static str, u64> {
        let tile_ir = self.tile_ir.values().flat_map(|ops| {
            let values = [ops.view_loads, ops.view_stores, ops.gathers, ops.scatters];
            named(
                TILE_OP_NAMES,
                values.into_iter().chain([ops.mma, ops.reductions]),
            )
        });
        let resources = self
            .resources
            .iter()
            .flat_map(|r| named(RESOURCE_NAMES, [r.registers, r.local_bytes]));
        let sass = self.sass.iter().flat_map(|s| {
            let memory = [s.tma_loads, s.tma_stores, s.global_loads, s.global_stores];
            named(
                SASS_NAMES,
                memory.into_iter().chain([s.mma, s.local, s.instructions]),
            )
        });
        let mut totals = BTreeMap::new();
        for (name, value) in tile_ir.chain(resources).chain(sass) {
            *totals.entry(name).or_insert(0) += u64::from(value);
        }
        totals
    }
}

/// The names of the totals, in the order [`CompileFacts::totals`] gives the values.
const TILE_OP_NAMES: &str = "view loads,view stores,gathers,scatters,MMA ops,reductions";
const RESOURCE_NAMES: &str = "registers,local bytes";
const SASS_NAMES: &str = "TMA loads,TMA stores,LDG,STG,SASS MMA,LDL/STL,SASS instructions";

/// Each of the comma-separated `names` with its value.
fn named(
    names: &'static str,
    values: impl IntoIterator<Item = u32>,
) -> impl Iterator<Item = (&'static str, u32)> {
    names.split(',').zip(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Tile IR dump in the shape cuda-tile writes, written for this test.
    const TILE_IR: &str = r#"cuda_tile.module @kernels {
  entry @rms_kernel(%arg0: !cuda_tile.tile<ptr<f16>>, %arg1: !cuda_tile.tile<i32>) {
    %0 = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tensor_view<?xf16>
    %1 = make_partition_view %0 : partition_view<tile=(1024)>
    %t = make_token : token
    %2, %t1 = load_view_tko weak %1[%c0] token = %t : tile<1024xf16>, token
    %3 = reduce %2 dim = 0 : tile<f32>
    %p = offset %base, %idx : tile<1024xptr<f16>>
    %4, %t2 = cuda_tile.load_ptr_tko weak %p token = %t1 : tile<1024xf16>, token
    %5 = "cuda_tile.mmaf"(%a, %b, %acc) : (tile<64x16xf16>, tile<16x64xf16>, tile<64x64xf32>) -> tile<64x64xf32>
    %t3 = store_view_tko weak %4, %1[%c0] token = %t2 : token
    %t4 = store_ptr_tko weak %p, %4 token = %t3 : token
    %t5 = store_view_tko weak %4, %1[%c1] token = %t4 : token
    // load_view_tko in a comment is not an op
    return
  }
}
"#;

    #[test]
    fn a_compiled_kernel_is_its_tile_ir_less_the_tree_it_was_built_in() {
        let here = CompiledKernel::of(TILE_IR, "");
        assert_eq!(here.entries, ["rms_kernel"]);
        // git's blob id of the text: `git hash-object` gives the same
        assert_eq!(
            CompiledKernel::of("x\n", "").blob,
            "587be6b4c3f93f93c489c0111bba5596147a26cb"
        );
        let at = |root: &str| CompiledKernel::of(&format!("x = \"{root}/k.py\"\n"), root);
        assert_eq!(at("/repo"), at("/repo/sandbox/baseline"));
        // a location moves with a comment; the code does not
        assert_eq!(
            without_locations(
                "%0 = addf %a, %b loc(#loc3)\n#loc3 = loc(fused[loc(\"/r/k (1).py\":7:2), loc(\"x\")])\nallocloc(1)\n"
            ),
            "%0 = addf %a, %b \n#loc3 = \nallocloc(1)\n"
        );
        assert_ne!(
            at("/repo").blob,
            CompiledKernel::of("x = \"/elsewhere/k.py\"\n", "/repo").blob
        );
    }

    /// A dump in the shape cuda-tile 1.7 writes (no module around the entry, no locations), of a kernel
    /// written for this test.
    const REAL_SHAPED: &str = "entry @halve_Kt1_A1f32_1l0_A1f32_1l0_I256(%arg0: tile<ptr<f32>>, %arg1: tile<i32>, %arg2: tile<ptr<f32>>, %arg3: tile<i32>) optimization_hints=<default = {}> {
  %0 = make_token : token
  %tview = make_tensor_view %arg0, shape = [%arg1], strides = [1] : tile<i32> -> tensor_view<?xf32, strides=[1]>
  %bid_x, %bid_y, %bid_z = get_tile_block_id : tile<i32>
  %pview = make_partition_view %tview : partition_view<tile=(256), tensor_view<?xf32, strides=[1]>>
  %tile, %tok = load_view_tko weak %pview[%bid_x] token = %0 : partition_view<tile=(256), tensor_view<?xf32, strides=[1]>>, tile<i32> -> tile<256xf32>, token
  %half = constant <f32: 5.000000e-01> : tile<256xf32>
  %1 = mulf %tile, %half : tile<256xf32>
  %2 = store_view_tko weak %1, %pview[%bid_x] token = %tok : tile<256xf32>, partition_view<tile=(256), tensor_view<?xf32, strides=[1]>>, tile<i32> -> token
  return
}
";

    #[test]
    fn a_real_shaped_dump_names_its_signature_and_counts_its_ops() {
        let kernel = CompiledKernel::of(REAL_SHAPED, "/repo");
        assert_eq!(kernel.entries, ["halve_Kt1_A1f32_1l0_A1f32_1l0_I256"]);
        let ops = tile_ops(REAL_SHAPED);
        assert_eq!((ops.view_loads, ops.view_stores), (1, 1));
    }

    #[test]
    fn a_compiled_name_belongs_to_its_function_and_to_no_other_prefix() {
        let entry = "halve_Kt1_A1f32_1l0_A1f32_1l0_I256";
        assert!(compiled_from(entry, "halve"));
        assert!(compiled_from("halve", "halve"));
        // a shorter function name is a prefix of the text, not of the signature
        assert!(!compiled_from(entry, "hal"));
        assert!(!compiled_from("halve_twice_Kt1_I8", "halve"));
        // the census's Python name never matches a longer function's compiled name in reverse either
        assert!(!compiled_from("halve", "halve_twice"));
        assert_eq!(
            function_of("f_K2_Kt1_I8", &["f", "f_K2", "g"]),
            Some("f_K2")
        );
        assert_eq!(function_of("f_Kt1_I8", &["f", "f_K2"]), Some("f"));
        assert_eq!(function_of("g2_Kt1", &["f", "g"]), None);
    }

    #[test]
    fn tile_ir_operations_by_kind() {
        assert_eq!(
            tile_ops(TILE_IR),
            TileOps {
                view_loads: 1,
                view_stores: 2,
                gathers: 1,
                scatters: 1,
                mma: 1,
                reductions: 1,
            }
        );
        assert_eq!(tile_ops(""), TileOps::default());
    }

    #[test]
    fn registers_and_spills() {
        let text = "\nFatbin elf code:\n================\narch = sm_90\n\nResource usage:\n \
                    Common:\n  GLOBAL:0\n Function rms_kernel:\n  REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:560 TEXTURE:0 SURFACE:0 SAMPLER:0\n \
                    Function matmul_kernel:\n  REG:168 STACK:16 SHARED:197632 LOCAL:24 CONSTANT[0]:600\n";
        let r = resources(text);
        assert_eq!(
            r,
            [
                Resources {
                    function: "rms_kernel".into(),
                    registers: 40,
                    local_bytes: 0,
                    stack_bytes: 0,
                    shared_bytes: 0
                },
                Resources {
                    function: "matmul_kernel".into(),
                    registers: 168,
                    local_bytes: 24,
                    stack_bytes: 16,
                    shared_bytes: 197632
                }
            ]
        );
    }

    #[test]
    fn sass_instruction_mix() {
        let text = "\tcode for sm_90\n\t\tFunction : rms_kernel\n\t.headerflags\t@\"EF_CUDA_SM90\"\n\
            /*0000*/                   LDC R1, c[0x0][0x28] ;\n\
            /*0010*/                   UTMALDG.2D [UR8], [UR4] ;\n\
            /*0020*/              @!P0 SYNCS.ARRIVE.TRANS64 RZ, [UR6], RZ ;\n\
            /*0030*/                   LDG.E.128 R4, desc[UR4][R2.64] ;\n\
            /*0040*/                   FFMA R8, R4, R4, R8 ;\n\
            /*0050*/                   STL [R1], R8 ;\n\
            /*0060*/                   UTMASTG.2D [UR4], [UR8] ;\n\
            /*0070*/                   EXIT ;\n\
            \t\t..........\n\
            \t\tFunction : matmul_kernel\n\
            /*0000*/                   HGMMA.64x64x16.F32 R24, gdesc[UR4], R24 ;\n\
            /*0010*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n\
            /*0020*/                   STG.E.128 desc[UR4][R2.64], R24 ;\n";
        let mix = sass_mix(text);
        assert_eq!(mix.len(), 2);
        let rms = &mix[0];
        assert_eq!(
            (
                rms.instructions,
                rms.tma_loads,
                rms.tma_stores,
                rms.global_loads,
                rms.local,
                rms.barriers
            ),
            (8, 1, 1, 1, 1, 1)
        );
        assert_eq!(rms.opcodes["FFMA"], 1);
        let mm = &mix[1];
        assert_eq!((mm.mma, mm.barriers, mm.global_stores), (1, 1, 1));
        let facts = CompileFacts {
            tile_ir: BTreeMap::from([("rms_kernel.tileir".to_string(), tile_ops(TILE_IR))]),
            resources: Vec::new(),
            sass: mix,
        };
        let totals = facts.totals();
        assert_eq!(totals["TMA stores"], 1);
        assert_eq!(totals["view stores"], 2);
        assert_eq!(totals["SASS instructions"], 11);
    }
}
