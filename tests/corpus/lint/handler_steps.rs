//! A trading loop whose handler runs the model once per candle and trains
//! it whenever its history fills (then empties it): the training's loop of
//! steps runs once per so many candles, so each candle stays one step and
//! the model's copy waits once per candle. A market's own `act`, taking
//! other arguments, is not the model's.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Model {
    net: nn::Sequential,
    opt: nn::Optimizer,
    device: Device,
}

impl Model {
    pub fn act(&self, observation: &[f32]) -> Vec<f32> {
        let xs = Tensor::from_slice(observation).to_device(self.device);
        let out = self.net.forward(&xs).sigmoid();
        Vec::<f32>::try_from(out.bernoulli()).unwrap() //~ warning host-sync
    }

    pub fn update(&mut self, history: &[Vec<f32>]) {
        for _ in 0..4 {
            for chunk in history.chunks(16) {
                let flat: Vec<f32> = chunk.concat();
                let xs = Tensor::from_slice(&flat).to_device(self.device).view([-1, 8]);
                let loss = self.net.forward(&xs).mean(Kind::Float);
                self.opt.backward_step(&loss);
            }
        }
    }
}

pub struct Market {
    position: bool,
}

impl Market {
    fn act(&mut self, seq: usize, price: f32, long: bool) -> Option<(usize, f32)> {
        if self.position == long {
            return None;
        }
        self.position = long;
        Some((seq, price))
    }
}

pub struct Trader {
    model: Model,
    markets: Vec<Market>,
    history: arrayvec::ArrayVec<Vec<f32>, 64>,
}

impl Trader {
    pub fn on_candle(&mut self, prices: &[f32]) -> Vec<(usize, f32)> {
        self.history.push(prices.to_vec());
        if self.history.is_full() {
            self.model.update(&self.history);
            self.history.clear();
        }
        let actions = self.model.act(prices); //~ warning host-sync
        (0..)
            .zip(actions)
            .zip(&mut self.markets)
            .filter_map(|((i, a), m)| m.act(i, prices[i], a > 0.5))
            .collect()
    }
}

pub fn run(candles: &[Vec<f32>]) -> usize {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::seq().add(nn::linear(vs.root(), 8, 8, Default::default()));
    let opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut trader = Trader {
        model: Model { net, opt, device: vs.device() },
        markets: (0..8).map(|_| Market { position: false }).collect(),
        history: arrayvec::ArrayVec::new(),
    };
    let mut orders = 0;
    for prices in candles {
        orders += trader.on_candle(prices).len(); //~ warning host-sync
    }
    orders
}

/// Orders go to an exchange's books, whose `update` (an outside crate's,
/// three arguments) trains no model: the loop over them is no loop of
/// steps, and the tick loop around it stays the step loop.
pub fn serve(model: &Model, ticks: &[Vec<f32>], exchange: &mut exchange::Exchange) -> usize {
    let mut filled = 0;
    for prices in ticks {
        let actions = model.act(prices); //~ warning host-sync
        for book in exchange.books_mut() {
            filled += usize::from(book.update(filled, prices[0], actions[0] > 0.5));
        }
    }
    filled
}
