mod helpers;

fn main() {
    helpers::run(tch::Device::cuda_if_available(), 10);
}
