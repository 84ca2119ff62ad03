//! A game or GUI framework runs some functions once per frame: bevy's
//! systems added outside the start-up schedules, a notan app's `update`
//! and `draw`, an `eframe::App`'s `update`. Each frame is a step, so a
//! read there, or in what they call, waits once per frame. A branch taken
//! when the user clicks or presses a key runs once per user event; a
//! start-up system runs once.

use bevy::prelude::*;
use tch::{nn, nn::Module, Device, Kind, Tensor};

#[derive(Resource)]
pub struct Brain {
    net: nn::Sequential,
    device: Device,
}

impl Brain {
    fn act(&self, observation: &[f32]) -> i64 {
        let x = Tensor::from_slice(observation).to(self.device);
        self.net.forward(&x).argmax(0, false).int64_value(&[]) //~ warning host-sync
    }

    fn describe(&self) -> f64 {
        self.net
            .forward(&Tensor::zeros([4], (Kind::Float, self.device)))
            .mean(Kind::Float)
            .double_value(&[]) //~ warning host-sync
    }
}

fn act_system(brain: Res<Brain>, mut agents: Query<&mut Transform>) {
    for mut transform in agents.iter_mut() {
        let action = brain.act(&[transform.translation.x, transform.translation.y, 0.0, 0.0]); //~ warning host-sync
        transform.translation.x += action as f32;
    }
}

fn score_system(brain: Res<Brain>) {
    let score = brain.describe(); //~ warning host-sync
    info!("score {score}");
}

fn inspect_system(brain: Res<Brain>, keys: Res<ButtonInput<KeyCode>>) {
    if keys.just_pressed(KeyCode::Space) {
        println!("{}", brain.describe());
    }
}

pub struct Viewer {
    brain: Brain,
}

impl eframe::App for Viewer {
    fn update(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        let value = self.brain.describe(); //~ warning host-sync
        egui::CentralPanel::default().show(ctx, |ui| ui.label(format!("{value}")));
    }
}

fn setup(mut commands: Commands) {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 3, Default::default()));
    let brain = Brain { net, device };
    println!("{}", brain.describe());
    commands.insert_resource(brain);
}

fn main() {
    App::new()
        .add_plugins(DefaultPlugins)
        .add_systems(Startup, setup)
        .add_systems(Update, (act_system, score_system, inspect_system.after(act_system)))
        .run();
}
