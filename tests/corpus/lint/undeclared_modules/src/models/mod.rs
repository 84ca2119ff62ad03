mod net;

pub use net::Agent;
