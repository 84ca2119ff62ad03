//! The search knows nothing of tensors: it asks an evaluator.

pub trait Evaluator {
    fn evaluate(&self, leaves: &[Vec<usize>]) -> Vec<(Vec<f32>, f32)>;
}

pub enum Descent {
    Known(f32),
    NeedsEvaluation(Vec<usize>),
}

#[derive(Default)]
pub struct Node {
    pub visits: u32,
    pub value: f32,
    pub children: Vec<Node>,
}

impl Node {
    /// Walks down the most visited children to a leaf.
    pub fn forward(&mut self, path: &mut Vec<usize>) -> Descent {
        let mut node = self;
        while !node.children.is_empty() {
            let best = (0..node.children.len())
                .max_by_key(|&i| node.children[i].visits)
                .unwrap_or(0);
            path.push(best);
            node = &mut node.children[best];
        }
        if node.visits > 0 {
            Descent::Known(node.value)
        } else {
            Descent::NeedsEvaluation(path.clone())
        }
    }

    /// Gathers a batch of leaves, then evaluates them all at once.
    pub fn simulate_batch(&mut self, evaluator: &impl Evaluator, batch: usize) -> f32 {
        let mut leaves = Vec::new();
        for _ in 0..batch * 4 {
            let mut path = Vec::new();
            match self.forward(&mut path) {
                Descent::Known(value) => self.value += value,
                Descent::NeedsEvaluation(leaf) => leaves.push(leaf),
            }
            if leaves.len() == batch {
                break;
            }
        }
        let evaluated = evaluator.evaluate(&leaves); //~ warning host-sync
        self.visits += 1;
        evaluated.iter().map(|(_, v)| v).sum()
    }
}
