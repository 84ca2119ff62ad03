//! A DCGAN: alternating discriminator and generator steps, with samples
//! written out once per epoch.

use tch::{nn, nn::ModuleT, nn::OptimizerConfig, Device, Kind, Tensor};

const BATCH: i64 = 64;
const LATENT: i64 = 100;

fn discriminator_loss(real: &Tensor, fake: &Tensor) -> Tensor {
    real.binary_cross_entropy_with_logits::<Tensor>(&real.ones_like(), None, None, tch::Reduction::Mean)
        + fake.binary_cross_entropy_with_logits::<Tensor>(&fake.zeros_like(), None, None, tch::Reduction::Mean)
}

fn save_grid(samples: &Tensor, path: &str) -> anyhow::Result<()> {
    let grid = samples.to_device(Device::Cpu);
    tch::vision::image::save(&grid, path)?;
    Ok(())
}

pub fn train(
    generator: &impl ModuleT,
    discriminator: &impl ModuleT,
    g_opt: &mut nn::Optimizer,
    d_opt: &mut nn::Optimizer,
    images: &Tensor,
    device: Device,
) -> anyhow::Result<()> {
    let fixed_noise = Tensor::randn([BATCH, LATENT, 1, 1], (Kind::Float, device));
    for epoch in 0..25 {
        let mut d_total = Tensor::zeros([], (Kind::Float, device));
        for (index, real) in images.split(BATCH, 0).iter().enumerate() {
            let real = real.to_device(device);
            let noise = Tensor::randn([BATCH, LATENT, 1, 1], (Kind::Float, device));
            let fake = generator.forward_t(&noise, true);
            let d_loss = discriminator_loss(
                &discriminator.forward_t(&real, true),
                &discriminator.forward_t(&fake.detach(), true),
            );
            d_opt.backward_step(&d_loss);
            d_total += d_loss.detach();
            let g_loss = discriminator
                .forward_t(&fake, true)
                .binary_cross_entropy_with_logits::<Tensor>(&fake.ones_like(), None, None, tch::Reduction::Mean);
            g_opt.backward_step(&g_loss);
            if g_loss.double_value(&[]) > 10.0 { //~ warning host-sync
                eprintln!("generator diverged at batch {index}");
            }
            let labels = Tensor::arange(BATCH, (Kind::Int64, device));
            let counts = labels.bincount::<Tensor>(None, 10); //~ warning data-dependent-shape
            let repeated = labels.repeat_interleave_self_tensor(&counts, 0, None); //~ warning data-dependent-shape
            // A scalar repeat count has a static output shape.
            let doubled = labels.repeat_interleave_self_int(2, 0, None);
            let _ = (repeated, doubled);
        }
        // Once per epoch: a note, not a warning.
        println!("epoch {epoch} discriminator loss {}", d_total); //~ note host-sync
        let samples = tch::no_grad(|| generator.forward_t(&fixed_noise, false));
        save_grid(&samples, &format!("samples-{epoch}.png"))?; //~ note host-sync
    }
    Ok(())
}
