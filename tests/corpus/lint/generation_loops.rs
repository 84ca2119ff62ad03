//! A generation loop hands a model's output on to its next iteration
//! (`hidden = model.forward_one(..)`): each of its iterations is one step,
//! even where a function it calls runs a loop of its own (an ODE solver's
//! steps within one frame). That function's reads outside its loop run
//! once per step, and so do those of the functions it calls. A loop whose
//! iterations stand apart (one prompt after another) leaves the callee's
//! loop the steps: the reads after it run once per call. A buffer flushed
//! once it holds enough (`if pending.len() >= n { ..; pending.clear() }`)
//! is emptied once per so many steps.

use tch::{nn, nn::Module, Kind, Tensor};

pub struct Speaker {
    head: nn::Sequential,
    backbone: nn::Sequential,
}

impl Speaker {
    fn forward_one(&self, x: &Tensor) -> Tensor {
        self.backbone.forward(x)
    }

    fn frame(&self, hidden: &Tensor) -> Option<Vec<f32>> {
        let code = self.head.forward(hidden).argmax(-1, false).int64_value(&[0]); //~ warning host-sync
        if code == 0 {
            return None;
        }
        Some(self.solve(hidden)) //~ warning host-sync
    }

    fn solve(&self, hidden: &Tensor) -> Vec<f32> {
        let mut x = hidden.randn_like();
        for _ in 0..7 {
            x = &x + self.head.forward(&x) * 0.1;
        }
        Vec::<f32>::try_from(x.view(-1)).unwrap() //~ warning host-sync
    }

    fn decode(&self, frames: &[Tensor]) -> Vec<f32> {
        Vec::<f32>::try_from(Tensor::stack(frames, 0).view(-1)).unwrap()
    }

    pub fn speak(&self, start: &Tensor, max_frames: usize) -> Vec<Vec<f32>> {
        let mut hidden = self.forward_one(start);
        let mut audio = Vec::new();
        let mut pending = Vec::new();
        for _ in 0..max_frames {
            let Some(codes) = self.frame(&hidden) else { //~ warning host-sync
                break;
            };
            let next = Tensor::from_slice(&codes).to_device(hidden.device());
            hidden = self.forward_one(&next);
            pending.push(hidden.shallow_clone());
            if pending.len() >= 8 {
                audio.push(self.decode(&pending)); //~ note host-sync
                pending.clear();
            }
        }
        audio
    }

    pub fn speak_each(&self, prompts: &[Tensor]) -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for prompt in prompts {
            let hidden = self.forward_one(prompt);
            out.push(self.solve(&hidden)); //~ note host-sync
        }
        out
    }
}
