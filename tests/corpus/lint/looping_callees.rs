//! A function that reads in a loop of its own, called in a loop: the
//! caller's loop waits for the device on every iteration of the callee's,
//! so the call is reported as well as the read, and so is its call in a
//! function that runs once per iteration. Called once per epoch, it
//! is a note.

use tch::{Device, Tensor};

pub struct Detector {
    model: tch::CModule,
    device: Device,
}

impl Detector {
    pub fn new(weights: &str, device: Device) -> Detector {
        let model = tch::CModule::load_on_device(weights, device).unwrap();
        Detector { model, device }
    }

    pub fn detect(&self, image: &Tensor) -> Vec<Vec<f32>> {
        let image = image.to_device(self.device);
        let predictions = self.model.forward_ts(&[image]).unwrap();
        self.suppress(&predictions.get(0)) //~ warning host-sync
    }

    fn suppress(&self, predictions: &Tensor) -> Vec<Vec<f32>> {
        let mut boxes = Vec::new();
        for index in 0..predictions.size()[0] {
            let row = Vec::<f32>::try_from(predictions.get(index)).unwrap(); //~ warning host-sync
            boxes.push(row);
        }
        boxes
    }
}

pub fn label(images: &[Tensor]) -> usize {
    let detector = Detector::new("detector.pt", Device::cuda_if_available());
    let mut found = 0;
    images.iter().for_each(|image| {
        found += detector.detect(image).len(); //~ warning host-sync
    });
    found
}

fn train_epoch(batches: &[(Tensor, Tensor)], model: &tch::CModule, opt: &mut tch::nn::Optimizer) -> f64 {
    let mut total = 0.0;
    for (xs, ys) in batches {
        let loss = model.forward_ts(&[xs]).unwrap().cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        total += loss.double_value(&[]); //~ warning host-sync
    }
    total
}

pub fn train(batches: &[(Tensor, Tensor)], model: &tch::CModule, opt: &mut tch::nn::Optimizer) {
    for epoch in 0..10 {
        let total = train_epoch(batches, model, opt); //~ note host-sync
        println!("epoch {epoch}: {total}");
    }
}
