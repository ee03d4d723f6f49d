//! The bookmarks server: `bookmarks serve --runtime hyper --store memory`, `bookmarks runtimes
//! --json`, and every other flag of the serve entry point (`bookmarks serve --help`).

fn main() {
    brigade_launch::main(brigade_launch::clap::command!(), bookmarks::services())
}
