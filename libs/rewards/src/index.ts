export { RewardGradingHandler, rewardFor, type RewardGradingOptions } from './reward-grading.handler';
