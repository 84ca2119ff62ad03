fn main() {
    engine::train::train(1000);
}
