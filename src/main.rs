// Until the CLI wires `refs` and `next` in, the module is only exercised by its tests.
#[allow(dead_code)]
mod references;

fn main() {
    println!("skeleton");
}
