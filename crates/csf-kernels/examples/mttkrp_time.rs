//! Times MTTKRP of each mode on a Hurray file, on the calling thread:
//! `cargo run --release -p csf-kernels --example mttkrp_time -- FILE [RANK] [REPEATS] [MODE]`.
//! Prints the best of `REPEATS` (default 5) per mode, rank 16 by default.

use std::time::Instant;

use csf_kernels::{Matrix, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().ok_or("usage: mttkrp_time FILE [RANK] [REPEATS] [MODE]")?;
    let r: usize = args.get(1).map_or(Ok(16), |a| a.parse())?;
    let repeats: usize = args.get(2).map_or(Ok(5), |a| a.parse())?;
    let only: Option<usize> = args.get(3).map(|a| a.parse()).transpose()?;
    let bytes = std::fs::read(path)?;
    let container = hurray_format::Container::decode(&bytes)?;
    let view = csf_core::CsfView::from_container(&container)?;
    let tensor = Tensor::<f64>::new(&view)?.with_parallel(false);
    let factors: Vec<Matrix<f64>> = view
        .shape()
        .iter()
        .map(|&e| {
            Matrix::from_rows(e as usize, r, (0..e as usize * r).map(|i| (i % 7) as f64 * 0.1).collect())
        })
        .collect::<Result<_, _>>()?;
    let refs: Vec<_> = factors.iter().map(Matrix::as_ref).collect();
    for mode in (0..view.rank()).filter(|m| only.map_or(true, |o| o == *m)) {
        let mut out = vec![0.0; factors[mode].rows() * r];
        let best = (0..repeats)
            .map(|_| {
                let start = Instant::now();
                tensor.mttkrp_into(&refs, mode, &mut out).expect("mttkrp");
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        println!("mode {} {:.4} s", mode + 1, best);
    }
    Ok(())
}
