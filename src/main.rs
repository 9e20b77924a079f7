fn main() {
    println!("skeleton");
}
